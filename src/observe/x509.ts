/**
 * The X.509 certificate builder, which certificates.ts loads only when it makes a certificate.
 * Loaded through this module of ours, for two reasons:
 * - @peculiar/x509 needs the reflect-metadata polyfill in place before it loads, and a module's
 *   imports run in order;
 * - it is CommonJS. The bundle (scripts/bundler.ts) keeps code loaded on demand in chunk files,
 *   and esbuild hands a dynamic import() of a CommonJS module in another chunk only its `default`
 *   (evanw/esbuild#3245: `x509.X509CertificateGenerator` was undefined in the image), whereas the
 *   named exports of an ES module reach the importer in either layout.
 */
import 'reflect-metadata';
export {
  ExtendedKeyUsage,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectAlternativeNameExtension,
  X509CertificateGenerator,
} from '@peculiar/x509';

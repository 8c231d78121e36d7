/**
 * V8 flags the operator process runs with, chosen by measurement (an upgrade wave over 1000 CRs on
 * the local control plane, operator alone):
 * - Node 24 lets the young generation grow to 32 MiB per semi-space on a big machine, and V8 lets
 *   old-generation garbage pile up far beyond the live set (about 45 MiB of live objects at 1000
 *   CRs): peak RSS 275 MiB. `--max-semi-space-size=4` alone brought a 200-CR wave from 241 to
 *   142 MiB at the same CPU, but not the 1000-CR wave (275 MiB).
 * - `--optimize-for-size` makes V8 collect and compact sooner: 136 MiB at 1000 CRs, for 40% more
 *   operator CPU under load (44 instead of 31 CPU-s for 1000 upgrades, next to about 135 CPU-s of
 *   helm), and the same wall time. (glibc's MALLOC_ARENA_MAX=2 changed nothing: 280 MiB.)
 * V8 reads these only at start-up, so they go on the command line: the Dockerfile ENTRYPOINT and the
 * bin shebang spell them out (a unit test keeps them in step), and the demo, the bench and the test
 * harness pass this list.
 */
export const OPERATOR_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--optimize-for-size'];

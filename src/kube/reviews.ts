/**
 * Delegated authentication and authorization: asking the API server who a bearer token belongs to
 * (TokenReview) and whether that user may do something (SubjectAccessReview). The operator needs
 * `create` on both (operator-sdk's `metrics-auth-role`).
 */
import { CoreResources, createObject } from './objects.js';
import type { KubeClient } from './rest.js';

/** Who a token belongs to, as the API server reports it. */
export interface ReviewedUser {
  readonly username: string;
  readonly uid?: string | undefined;
  readonly groups?: readonly string[] | undefined;
  readonly extra?: Readonly<Record<string, readonly string[]>> | undefined;
}

export type TokenReviewResult =
  | { readonly authenticated: true; readonly user: ReviewedUser }
  | { readonly authenticated: false; readonly error: string };

export interface AccessReviewResult {
  readonly allowed: boolean;
  /** The authorizer's explanation, when it gave one. */
  readonly reason: string;
}

/** What the metrics endpoint asks about a user: may they `verb` the non-resource URL `path`? */
export interface NonResourceAccess {
  readonly path: string;
  readonly verb: string;
}

/** The two reviews, as an interface so the caching around them is tested without a cluster. */
export interface Reviewer {
  reviewToken(token: string): Promise<TokenReviewResult>;
  reviewAccess(user: ReviewedUser, access: NonResourceAccess): Promise<AccessReviewResult>;
}

interface TokenReviewStatus {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }; error?: string };
}

interface SubjectAccessReviewStatus {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/** Reviews are small and a scraper is waiting: a slow API server must not hold a scrape for 30 s. */
const REVIEW_TIMEOUT_MS = 5_000;

export function kubeReviewer(client: KubeClient): Reviewer {
  return {
    async reviewToken(token) {
      const review = await createObject<TokenReviewStatus>(
        client,
        CoreResources.tokenReview,
        undefined,
        { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
        { timeoutMs: REVIEW_TIMEOUT_MS },
      );
      const s = review.status;
      const username = s?.user?.username;
      if (s?.authenticated !== true || username === undefined || username === '') {
        return { authenticated: false, error: s?.error ?? 'the token is not valid' };
      }
      return { authenticated: true, user: { username, uid: s.user?.uid, groups: s.user?.groups, extra: s.user?.extra } };
    },

    async reviewAccess(user, access) {
      const review = await createObject<SubjectAccessReviewStatus>(
        client,
        CoreResources.subjectAccessReview,
        undefined,
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.username,
            ...(user.uid === undefined ? {} : { uid: user.uid }),
            ...(user.groups === undefined ? {} : { groups: user.groups }),
            ...(user.extra === undefined ? {} : { extra: user.extra }),
            nonResourceAttributes: { path: access.path, verb: access.verb },
          },
        },
        { timeoutMs: REVIEW_TIMEOUT_MS },
      );
      const s = review.status;
      return { allowed: s?.allowed === true && s.denied !== true, reason: s?.reason ?? s?.evaluationError ?? '' };
    },
  };
}

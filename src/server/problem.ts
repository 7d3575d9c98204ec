/** RFC 9457 problem details: every error response of the server. */
import type { ParameterProblem } from '../errors.js';

export const PROBLEM_TYPES = {
  invalidParameters: { type: 'urn:convx:problem:invalid-parameters', title: 'Invalid parameters', status: 400 },
  invalidBody: { type: 'urn:convx:problem:invalid-body', title: 'Invalid request body', status: 400 },
  missingCredentials: { type: 'urn:convx:problem:missing-credentials', title: 'Missing credentials', status: 403 },
  invalidToken: { type: 'urn:convx:problem:invalid-token', title: 'Invalid token', status: 403 },
  expiredToken: { type: 'urn:convx:problem:expired-token', title: 'Expired token', status: 403 },
  unknownPlugin: { type: 'urn:convx:problem:unknown-plugin', title: 'Unknown plugin', status: 403 },
  notFound: { type: 'urn:convx:problem:not-found', title: 'Not found', status: 404 },
  dataError: { type: 'urn:convx:problem:data-error', title: 'The dataset cannot answer this query', status: 500 },
  internal: { type: 'urn:convx:problem:internal', title: 'Internal server error', status: 500 },
} as const;

export type ProblemKind = keyof typeof PROBLEM_TYPES;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: ParameterProblem[];
}

export function problem(kind: ProblemKind, detail: string, errors?: ParameterProblem[]): Problem {
  return { ...PROBLEM_TYPES[kind], detail, ...(errors?.length ? { errors } : {}) };
}

/** Thrown by route code to answer with a problem. */
export class ProblemError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

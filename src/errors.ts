/**
 * The domain's refusals: what a decision or a query answers when it will not do what it was asked.
 * They say why in the domain's terms; only the HTTP layer's exception filter gives each a status
 * (src/http/api-exception.filter.ts), as it does the stores' failures (src/storage/).
 */
export type RefusalReason =
  /** No such record for this account (another account's records do not exist for it). */
  | 'not_found'
  /** The request contradicts what is stored: a slug taken, an Idempotency-Key used for another request. */
  | 'conflict'
  /** The request's values break a rule; `details` names each field. */
  | 'invalid'
  /** What the request refers to existed and is gone for good (erased): it cannot be done again. */
  | 'gone'
  /** The record is not at the revision the request expected (If-Match). */
  | 'precondition_failed';

export interface FieldFault {
  field: string;
  message: string;
}

export class Refusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
    readonly details?: FieldFault[],
  ) {
    super(message);
    this.name = 'Refusal';
  }
}

export const validationFailed = (details: FieldFault[]) => new Refusal('invalid', 'The request has invalid fields.', details);

export const notFound = (what: string) => new Refusal('not_found', `${what} not found.`);

export const conflict = (message: string, details?: FieldFault[]) => new Refusal('conflict', message, details);

/** Too many writers decided on the record at once, each refused by another's append: worth another try. */
export const contended = (label: string) => conflict(`The ${label.toLowerCase()} is being changed by others right now; try again.`);

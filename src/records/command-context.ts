/** Who is asking and which request this is: what commands and the events they append carry along. */
export interface CommandContext {
  accountId: string;
  /** Also the correlationId of the events the request appends. */
  requestId: string;
}

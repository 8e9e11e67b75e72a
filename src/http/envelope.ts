/** The success envelope of docs/api.md ("Answers"). */
export interface Envelope<T> {
  data: T;
  success: true;
  status: number;
  message?: string;
}

export const envelope = <T>(data: T, status: number, message?: string): Envelope<T> =>
  message === undefined ? { data, success: true, status } : { data, success: true, status, message };

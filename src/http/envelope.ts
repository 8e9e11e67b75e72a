/** The success envelope of service-interface.md 2.1. */
export interface Envelope<T> {
  data: T;
  success: true;
  status: number;
  message?: string;
}

export const envelope = <T>(data: T, status: number, message?: string): Envelope<T> =>
  message === undefined ? { data, success: true, status } : { data, success: true, status, message };

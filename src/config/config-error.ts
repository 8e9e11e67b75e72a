/** A setting the service cannot run with: told in one line naming the variable, without a stack. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

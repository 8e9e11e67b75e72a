import { CreateOnly, Digits, Email, Example, Mobile, OneOfRequired, Text, updateBodyOf } from '../http/field-rules';

/**
 * POST /v1/customers: every customer field; email or mobile is required. The one list of the
 * customer's fields: the update body, the views and the OpenAPI examples are derived from it.
 */
export class CreateCustomerBody {
  @Text(255) @Example('Ada Lovelace') name?: string | null;
  @Email() @OneOfRequired(['email', 'mobile']) @Example('ada@example.com') email?: string | null;
  @Mobile() @OneOfRequired(['email', 'mobile']) @Example('09121234567') mobile?: string | number | null;
  @Text(1000) @Example('7 Enghelab Square, Tehran') address?: string | null;
  @Digits() @CreateOnly() @Example('1416753955') postal_code?: string | number | null;
  @Text(255) @Example('Analytical Engines') company?: string | null;
  @Digits() @Example(2166554433) tel?: string | number | null;
  @Digits() @CreateOnly() @Example('') fax?: string | number | null;
  @Digits() @CreateOnly() @Example('10320548761') registration_number?: string | number | null;
  @Digits() @CreateOnly() @Example('411122233344') economical_number?: string | number | null;
}

/** PUT /v1/customers/{id}: the fields an update may change, all but the create-only ones. */
export class UpdateCustomerBody extends updateBodyOf(CreateCustomerBody) {}

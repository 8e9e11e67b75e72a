import { Digits, Email, Mobile, OneOfRequired, Text } from '../http/field-rules';

/** PUT /v1/customers/{id}: the fields an update may change. */
export class UpdateCustomerBody {
  static readonly createOnly = ['postal_code', 'fax', 'registration_number', 'economical_number'];

  @Text(255) name?: string | null;
  @Email() email?: string | null;
  @Mobile() mobile?: string | number | null;
  @Text(1000) address?: string | null;
  @Text(255) company?: string | null;
  @Digits() tel?: string | number | null;
}

/** POST /v1/customers: every customer field; email or mobile is required. */
export class CreateCustomerBody {
  @Text(255) name?: string | null;
  @Email() @OneOfRequired(['email', 'mobile']) email?: string | null;
  @Mobile() @OneOfRequired(['email', 'mobile']) mobile?: string | number | null;
  @Text(1000) address?: string | null;
  @Digits() postal_code?: string | number | null;
  @Text(255) company?: string | null;
  @Digits() tel?: string | number | null;
  @Digits() fax?: string | number | null;
  @Digits() registration_number?: string | number | null;
  @Digits() economical_number?: string | number | null;
}

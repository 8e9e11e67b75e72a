import { Digits, Email, Slug, Text } from '../http/field-rules';

/** POST and PUT /v1/profiles: every field is optional; on PUT, fields not sent keep their values. */
export class ProfileBody {
  @Text(255) name?: string | null;
  @Text(2000) description?: string | null;
  @Digits() tel?: string | number | null;
  @Email() email?: string | null;
  @Text(1000) address?: string | null;
  @Text(2048) site?: string | null;
  @Slug() slug?: string | null;
  @Text(2048) messenger?: string | null;
  @Text(2048) network_a?: string | null;
  @Text(2048) network_b?: string | null;
  @Text(2048) network_c?: string | null;
}

import { Digits, Email, Example, Slug, Text } from '../http/field-rules';

/**
 * POST and PUT /v1/profiles: every field is optional; on PUT, fields not sent keep their values.
 * The one list of the profile's fields: the view and the OpenAPI examples are derived from it.
 */
export class ProfileBody {
  @Text(255) @Example('Saffron Tea House') name?: string | null;
  @Text(2000) @Example('Loose-leaf tea and teaware, shipped nationwide') description?: string | null;
  @Digits() @Example('02188776655') tel?: string | number | null;
  @Email() @Example('orders@saffrontea.example') email?: string | null;
  @Text(1000) @Example('12 Valiasr Street, Tehran') address?: string | null;
  @Text(2048) @Example('https://saffrontea.example') site?: string | null;
  // No example: a slug is unique, so a second "Try it out" would answer 409.
  @Slug() slug?: string | null;
  @Text(2048) @Example('https://chat.example/saffrontea') messenger?: string | null;
  @Text(2048) @Example('https://network-a.example/saffrontea') network_a?: string | null;
  @Text(2048) @Example('') network_b?: string | null;
  @Text(2048) @Example('') network_c?: string | null;
}

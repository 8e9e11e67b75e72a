import type { ArgumentMetadata } from '@nestjs/common';
import fc from 'fast-check';
import { CreateCustomerBody, UpdateCustomerBody } from '../../src/customers/customer.body';
import { Refusal } from '../../src/errors';
import { BodyValidationPipe, checkBody, toFields } from '../../src/http/body-validation.pipe';
import { fieldChecks } from '../../src/http/field-rules';
import { ProfileBody } from '../../src/profiles/profile.body';

/**
 * The CLI's import checks rows with checkBody, the field rules' own functions without
 * class-validator: it must take and refuse exactly what the API's pipe does, with its messages.
 */
describe('checkBody, against the API pipe', () => {
  const pipe = new BodyValidationPipe();
  const byPipe = (metatype: abstract new () => object, value: Record<string, unknown>) => {
    try {
      return { fields: toFields(pipe.transform(value, { type: 'body', metatype } as ArgumentMetadata) as object) };
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      return { faults: error.details! };
    }
  };
  const sorted = (outcome: ReturnType<typeof checkBody>) =>
    'faults' in outcome ? { faults: [...outcome.faults].sort((a, b) => `${a.field} ${a.message}`.localeCompare(`${b.field} ${b.message}`)) } : outcome;

  const value = fc.oneof(
    fc.constantFrom(null, '', '09121234567', '۰۹۱۲۱۲۳۴۵۶۷', 9121234567, 19121234567, 'a@example.com', 'not mail', '0021', 12, -1, 1.5, 'Ab12', '\ud83d', {}),
    fc.string({ maxLength: 30 }),
    fc.integer(),
  );
  const names = (cls: abstract new () => object, extra: string[]) => fc.constantFrom(...fieldChecks(cls).keys(), ...extra);

  for (const [name, cls] of [
    ['the customer create body', CreateCustomerBody],
    ['the customer update body', UpdateCustomerBody],
    ['the profile body', ProfileBody],
  ] as const) {
    it(`takes and refuses what the pipe does, with its messages: ${name}`, () => {
      fc.assert(
        fc.property(fc.dictionary(names(cls, ['id', 'created', 'fax', 'unknown_field']), value, { maxKeys: 8 }), (body) => {
          expect(sorted(checkBody(cls, body))).toEqual(sorted(byPipe(cls, body)));
        }),
        { numRuns: 500 },
      );
    });
  }

  it('makes Persian and Arabic-Indic digits ASCII, as the API does', () => {
    expect(checkBody(CreateCustomerBody, { mobile: '۰۹۱۲۱۲۳۴۵۶۷', tel: '٠٢١' })).toEqual({ fields: { mobile: '09121234567', tel: '021' } });
  });
});

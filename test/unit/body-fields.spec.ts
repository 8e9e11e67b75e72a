import type { ArgumentMetadata } from '@nestjs/common';

/**
 * Issue 34 item 5: a customer field is declared once, in the body class. This loads the service's
 * modules afresh with a customer body that has two more fields, and checks that every list derived
 * from the body picks them up: no view, example or list of names was edited.
 */
type Modules = {
  body: typeof import('../../src/customers/customer.body');
  view: typeof import('../../src/customers/customer.view');
  rules: typeof import('../../src/http/field-rules');
  api: typeof import('../../src/customers/customer.api');
  pipe: typeof import('../../src/http/body-validation.pipe');
};

describe('a customer field added to the body class alone', () => {
  let m: Modules;
  beforeAll(async () => {
    await jest.isolateModulesAsync(async () => {
      jest.doMock('../../src/customers/customer.body', () => {
        // The decorators of this module registry, the one the views and examples below read.
        const { CreateOnly, Digits, Example, Text, updateBodyOf } = jest.requireActual<Modules['rules']>('../../src/http/field-rules');
        const actual = jest.requireActual<Modules['body']>('../../src/customers/customer.body');
        class CreateCustomerBody extends actual.CreateCustomerBody {
          @Digits() @Example('02155667788') branch_tel?: string | number | null;
          @Text(50) @CreateOnly() @Example('north') region?: string | null;
        }
        class UpdateCustomerBody extends updateBodyOf(CreateCustomerBody) {}
        return { CreateCustomerBody, UpdateCustomerBody };
      });
      m = {
        body: await import('../../src/customers/customer.body'),
        view: await import('../../src/customers/customer.view'),
        rules: await import('../../src/http/field-rules'),
        api: await import('../../src/customers/customer.api'),
        pipe: await import('../../src/http/body-validation.pipe'),
      };
    });
  });
  const validate = (metatype: abstract new () => object, value: object) =>
    new m.pipe.BodyValidationPipe().transform(value, { type: 'body', metatype } as ArgumentMetadata);

  it('is in every field list derived from the body', () => {
    expect(m.view.CUSTOMER_FIELDS.slice(-2)).toEqual(['branch_tel', 'region']);
    expect(m.body.UpdateCustomerBody.createOnly).toEqual(['postal_code', 'fax', 'registration_number', 'economical_number', 'region']);
    expect(m.rules.DIGIT_FIELDS.has('branch_tel')).toBe(true);
    expect(m.rules.DIGIT_FIELDS.has('region')).toBe(false);
  });

  it('is in the create answer and the OpenAPI examples, not in the short answer', () => {
    expect(Object.keys(m.api.CUSTOMER_API.examples.create).slice(-2)).toEqual(['branch_tel', 'region']);
    expect(Object.keys(m.api.CUSTOMER_API.examples.full)).toEqual(['id', ...m.view.CUSTOMER_FIELDS, 'created']);
    expect(m.api.CUSTOMER_API.examples.full).toMatchObject({ branch_tel: '02155667788', region: 'north' });
    expect(Object.keys(m.api.CUSTOMER_API.examples.short)).toEqual(['id', ...m.view.CUSTOMER_SHORT_FIELDS, 'created']);
  });

  it('is taken on create, on update unless create-only, under its own rule', () => {
    expect(validate(m.body.CreateCustomerBody, { email: 'a@b.co', branch_tel: '۰۲۱', region: 'north' })).toMatchObject({ branch_tel: '021', region: 'north' });
    expect(validate(m.body.UpdateCustomerBody, { branch_tel: '٠٢١' })).toMatchObject({ branch_tel: '021' });
    expect(() => validate(m.body.UpdateCustomerBody, { region: 'south', branch_tel: 'x' })).toThrow(
      expect.objectContaining({
        details: [
          { field: 'region', message: 'region can only be set when the record is created' },
          { field: 'branch_tel', message: 'branch_tel must be a non-negative integer (at most 2^53-1) or a string of 1 to 20 digits' },
        ],
      }),
    );
  });
});

import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional, ApiPropertyOptions } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { isEmail, registerDecorator } from 'class-validator';

/**
 * The request field rules of docs/api.md as class-validator decorators, each also describing its
 * field in the OpenAPI document, so what is checked and what is documented cannot drift apart.
 * Each accepts a missing field, null and '' (the last two clear an optional field), so a rule
 * speaks only of real values. Each also records its field (bodyFields), so that the body classes
 * are the one list of the fields.
 */

/** The values that clear a field, in OpenAPI 3.0 terms. */
const CLEARED = { type: 'string', nullable: true, enum: ['', null], description: 'no value: clears the field' };

/**
 * The names of the fields that take digits, in bodies and as list filters (`tel`, `mobile`): filled
 * by @Digits and @Mobile as the body classes load, so a new digit field needs naming nowhere else.
 */
export const DIGIT_FIELDS = new Set<string>();

/**
 * A field of a body class as its decorators describe it. The body classes are where the fields are
 * listed: the views, the OpenAPI examples and the update body are derived from these.
 */
export interface BodyField {
  name: string;
  /** Taken by a create only: left out of the derived update body, which names it when refusing it. */
  createOnly: boolean;
  /** Its value in the OpenAPI examples; none leaves it out of what "Try it out" sends. */
  example?: string | number;
  /** Its own rules (not whole-record ones such as @OneOfRequired), to give it again in a derived body. */
  rules: PropertyDecorator[];
}

/** A body class, as a decorator's `target.constructor` is one. */
type BodyClass = abstract new () => object;

const BODY_FIELDS = new Map<BodyClass, Map<string, BodyField>>();

/**
 * The fields of a body class, in declaration order (decorators run field by field, top to bottom),
 * those of the class it extends first, as validation and the OpenAPI schema take them too.
 */
export function bodyFields(cls: BodyClass): BodyField[] {
  const own = [...(BODY_FIELDS.get(cls)?.values() ?? [])];
  const parent = Object.getPrototypeOf(cls) as BodyClass;
  return parent === Function.prototype ? own : [...bodyFields(parent).filter((f) => !BODY_FIELDS.get(cls)?.has(f.name)), ...own];
}

export const fieldNames = (cls: BodyClass): string[] => bodyFields(cls).map((f) => f.name);

function fieldOf(target: object, property: string | symbol): BodyField {
  const cls = target.constructor as BodyClass;
  const fields = BODY_FIELDS.get(cls) ?? BODY_FIELDS.set(cls, new Map()).get(cls)!;
  const name = String(property);
  if (!fields.has(name)) fields.set(name, { name, createOnly: false, rules: [] });
  return fields.get(name)!;
}

/** A rule of one field, recorded so a derived body can give it again. */
const fieldRule =
  (decorator: PropertyDecorator, digits = false): PropertyDecorator =>
  (target, property) => {
    const field = fieldOf(target, property);
    field.rules.push(decorator);
    if (digits) DIGIT_FIELDS.add(field.name);
    decorator(target, property);
  };

/** Marks a field taken on create only. */
export const CreateOnly = (): PropertyDecorator => (target, property) => {
  fieldOf(target, property).createOnly = true;
};

/** The field's value in the OpenAPI examples (kept out of the schema: the document shows it in the examples). */
export const Example =
  (value: string | number): PropertyDecorator =>
  (target, property) => {
    fieldOf(target, property).example = value;
  };

/**
 * The update body of a create body: its fields but the create-only ones, under their own rules. The
 * create's whole-record rules are left out: an update is checked once merged with the record.
 * Extend it (`class UpdateXBody extends updateBodyOf(CreateXBody) {}`), so the class has a name.
 */
export function updateBodyOf<T extends object>(create: new () => T) {
  const update = class {};
  const fields = bodyFields(create);
  for (const field of fields.filter((f) => !f.createOnly)) {
    // The TypeScript type the compiler recorded, which the OpenAPI schema reads when a rule gives none.
    const type: unknown = Reflect.getMetadata('design:type', create.prototype as T, field.name);
    Reflect.defineMetadata('design:type', type, update.prototype, field.name);
    for (const rule of field.rules) rule(update.prototype, field.name);
  }
  const createOnly: readonly string[] = fields.filter((f) => f.createOnly).map((f) => f.name);
  return Object.assign(update as new () => Partial<T>, { createOnly });
}

/** Persian (U+06F0–U+06F9) and Arabic-Indic (U+0660–U+0669) digits as ASCII ones; other characters as they are. */
export const asciiDigits = (value: string): string => value.replace(/[\u06F0-\u06F9\u0660-\u0669]/g, (d) => String(d.charCodeAt(0) & 0xf));

const isBlank = (v: unknown) => v === undefined || v === null || v === '';
const isText = (v: unknown): v is string => typeof v === 'string' && v.isWellFormed();

/**
 * The fault of a string that is not well-formed: JSON can carry half of a UTF-16 surrogate pair
 * (`"\ud83d"`), which no UTF-8 text can hold. Said as such, since its length is not what is wrong.
 */
const illFormed = (field: string, value: unknown): string | undefined =>
  typeof value === 'string' && !value.isWellFormed()
    ? `${field} must be well-formed Unicode text, but it holds a lone surrogate (a \\uD800-\\uDFFF escape not in a pair)`
    : undefined;

/** One rule of a field as plain functions: what class-validator runs, for a check without it (checkFields). */
export interface FieldCheck {
  test: (value: unknown, object: Record<string, unknown>) => boolean;
  message: (field: string, value: unknown) => string;
}

/** By body class, then field: its rules' checks, in the order class-validator reports them, and whether its digits are made ASCII first. */
interface FieldChecks {
  checks: FieldCheck[];
  asciiDigits: boolean;
}
const CHECKS = new Map<BodyClass, Map<string, FieldChecks>>();

function checksOf(target: object, property: string | symbol) {
  const cls = target.constructor as BodyClass;
  const fields = CHECKS.get(cls) ?? CHECKS.set(cls, new Map()).get(cls)!;
  const name = String(property);
  if (!fields.has(name)) fields.set(name, { checks: [], asciiDigits: false });
  return fields.get(name)!;
}

/**
 * The checks of a body class's fields (those of the class it extends first), as its decorators
 * registered them with class-validator: the same tests and messages, run without class-transformer
 * and class-validator's per-object work (a bulk import checks a million rows).
 */
export function fieldChecks(cls: BodyClass): Map<string, FieldChecks> {
  const parent = Object.getPrototypeOf(cls) as BodyClass;
  const inherited = parent === Function.prototype ? [] : [...fieldChecks(parent)];
  return new Map([...inherited, ...(CHECKS.get(cls) ?? [])]);
}

function rule(
  name: string,
  test: (value: unknown, object: Record<string, unknown>) => boolean,
  message: (field: string, value: unknown) => string,
  doc?: ApiPropertyOptions,
) {
  return (target: object, property: string | symbol) => {
    const propertyName = String(property);
    checksOf(target, property).checks.push({ test, message });
    if (doc) ApiPropertyOptional(doc)(target, propertyName);
    registerDecorator({
      name,
      target: target.constructor,
      propertyName,
      validator: {
        validate: (value, args) => test(value, args?.object as Record<string, unknown>),
        defaultMessage: (args) => message(args?.property ?? propertyName, args?.value),
      },
    });
  };
}

/** A string of at most `max` characters (Unicode code points). */
export const Text = (max: number) =>
  fieldRule(
    rule(
      'text',
      (v) => v === undefined || v === null || (isText(v) && [...v].length <= max),
      (f, v) => illFormed(f, v) ?? `${f} must be a string of at most ${max} characters`,
      { type: 'string', maxLength: max, nullable: true },
    ),
  );

/** Digit strings reach the rule, and the domain, in ASCII: clients may type Persian or Arabic-Indic digits. */
const AsciiDigits = (): PropertyDecorator => (target, property) => {
  checksOf(target, property).asciiDigits = true;
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? asciiDigits(value) : value))(target, property);
};

const DIGITS_NOTE = 'Persian (۰-۹) and Arabic-Indic (٠-٩) digits are taken too, and answered as ASCII';

/** A JSON integer >= 0, or a string of 1 to 20 digits (leading zeros kept). */
export const Digits = () =>
  fieldRule(
    applyDecorators(
      AsciiDigits(),
      rule(
        'digits',
        (v) => isBlank(v) || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^[0-9]{1,20}$/.test(v)),
        (f) => `${f} must be a non-negative integer (at most 2^53-1) or a string of 1 to 20 digits`,
        {
          oneOf: [
            { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
            { type: 'string', pattern: '^[0-9\u06F0-\u06F9\u0660-\u0669]{1,20}$', description: `leading zeros are kept; ${DIGITS_NOTE}` },
            CLEARED,
          ],
        },
      ),
    ),
    true,
  );

/** Exactly 11 digits, as a string or an integer. */
export const Mobile = () =>
  fieldRule(
    applyDecorators(
      AsciiDigits(),
      rule(
        'mobile',
        (v) => isBlank(v) || (typeof v === 'string' && /^[0-9]{11}$/.test(v)) || (typeof v === 'number' && Number.isInteger(v) && v >= 1e10 && v < 1e11),
        (f, v) =>
          // An integer cannot carry the leading zero of a number like 09121234567: say so rather than only count.
          typeof v === 'number' && Number.isInteger(v) && v >= 1e9 && v < 1e10
            ? `${f} must be exactly 11 digits; an integer loses its leading zero, so send it as a string, e.g. "0${v}"`
            : `${f} must be exactly 11 digits`,
        {
          oneOf: [
            { type: 'string', pattern: '^[0-9\u06F0-\u06F9\u0660-\u0669]{11}$', description: `leading zeros are kept; ${DIGITS_NOTE}` },
            { type: 'integer', minimum: 1e10, maximum: 1e11 - 1 },
            CLEARED,
          ],
        },
      ),
    ),
    true,
  );

export const Email = () =>
  fieldRule(
    rule(
      'email',
      (v) => isBlank(v) || (isText(v) && v.length <= 254 && isEmail(v)),
      (f, v) => illFormed(f, v) ?? `${f} must be a valid e-mail address of at most 254 characters`,
      { oneOf: [{ type: 'string', format: 'email', maxLength: 254 }, CLEARED] },
    ),
  );

/** A store code: 1 to 64 English letters and digits. */
export const Slug = () =>
  fieldRule(
    rule(
      'slug',
      (v) => isBlank(v) || (typeof v === 'string' && /^[A-Za-z0-9]{1,64}$/.test(v)),
      (f) => `${f} must be 1 to 64 English letters and digits`,
      {
        oneOf: [{ type: 'string', pattern: '^[A-Za-z0-9]{1,64}$' }, CLEARED],
        description: 'store code, unique across the service ignoring case',
      },
    ),
  );

/** At least one of the fields must have a value (put it on each of them, so each is named). */
export const OneOfRequired = (fields: string[]) =>
  rule(
    'oneOfRequired',
    (_v, object) => fields.some((f) => !isBlank(object[f])),
    () => `at least one of ${fields.join(' and ')} must be filled in`,
  );

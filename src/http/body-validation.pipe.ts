import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync } from 'class-validator';
import { FieldFault, validationFailed } from '../errors';
import { asciiDigits, fieldChecks } from './field-rules';

const OUTPUT_ONLY = new Set(['id', 'logo', 'signature', 'default', 'created']);

/** A body class may list fields it refuses because they are only taken at creation. */
export interface BodyClass {
  new (): object;
  createOnly?: readonly string[];
}

/**
 * Validates a request body against its class: it must be a JSON object, every field must be one the
 * operation takes (never silently dropped), and every value must pass its rule. All faults are
 * reported together. Unknown names are refused before class-transformer sees the object, so names
 * like `__proto__` never reach an instance.
 */
@Injectable()
export class BodyValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const cls = metadata.metatype as BodyClass | undefined;
    if (metadata.type !== 'body' || !cls) return value;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw validationFailed([{ field: '(body)', message: 'the request body must be a JSON object' }]);
    }
    const accepted = acceptedFields(cls);
    const faults: FieldFault[] = [];
    const known: Record<string, unknown> = {};
    for (const [field, v] of Object.entries(value)) {
      // Every field takes a scalar. A nested value is swapped for an empty one that fails the
      // field's rule the same way, so class-transformer never recurses into a hostile depth.
      if (accepted.has(field)) known[field] = typeof v === 'object' && v !== null ? {} : v;
      else faults.push({ field, message: refusal(cls, field) });
    }
    const instance = plainToInstance(cls, known);
    // Every rule is synchronous (field-rules.ts): validateSync spares a promise per rule.
    for (const error of validateSync(instance)) {
      for (const message of Object.values(error.constraints ?? {})) faults.push({ field: error.property, message });
    }
    if (faults.length) throw validationFailed(faults);
    return instance;
  }
}

const acceptedCache = new Map<BodyClass, Set<string>>();

function acceptedFields(cls: BodyClass): Set<string> {
  let fields = acceptedCache.get(cls);
  if (!fields) {
    const rules = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
    fields = new Set(rules.map((r) => r.propertyName));
    acceptedCache.set(cls, fields);
  }
  return fields;
}

function refusal(cls: BodyClass, field: string): string {
  if (OUTPUT_ONLY.has(field)) return `${field} is set by the service and cannot be sent`;
  if (cls.createOnly?.includes(field)) return `${field} can only be set when the record is created`;
  return `${field} is not a field this operation accepts`;
}

/** A validated body as the domain takes it: every value a string, '' for "no value". */
export function toFields(body: object): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [field, v] of Object.entries(body)) {
    if (v === undefined) continue;
    fields[field] = v === null ? '' : String(v);
  }
  return fields;
}

/**
 * A body checked as BodyValidationPipe checks it (the same fields taken and refused, the same rules
 * and messages, digits made ASCII), without class-transformer and class-validator: the rules' own
 * functions (fieldChecks), run straight on the values. For the CLI's bulk import, where the pipe's
 * per-object work would cost more than the rest of a row's. Returns the fields as the domain takes
 * them (toFields), or every fault.
 */
export function checkBody(cls: BodyClass, value: Record<string, unknown>): { fields: Record<string, string> } | { faults: FieldFault[] } {
  let checks = checksCache.get(cls);
  if (!checks) checksCache.set(cls, (checks = fieldChecks(cls)));
  const faults: FieldFault[] = [];
  const known: Record<string, unknown> = {};
  for (const [field, v] of Object.entries(value)) {
    const rules = checks.get(field);
    if (!rules) faults.push({ field, message: refusal(cls, field) });
    else known[field] = typeof v === 'object' && v !== null ? {} : rules.asciiDigits && typeof v === 'string' ? asciiDigits(v) : v;
  }
  for (const [field, rules] of checks) {
    for (const { test, message } of rules.checks) if (!test(known[field], known)) faults.push({ field, message: message(field, known[field]) });
  }
  return faults.length ? { faults } : { fields: toFields(known) };
}

const checksCache = new Map<BodyClass, ReturnType<typeof fieldChecks>>();

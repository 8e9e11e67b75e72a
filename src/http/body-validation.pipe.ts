import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { FieldFault, validationFailed } from '../errors';
import { bodyFields } from './field-rules';

const OUTPUT_ONLY = new Set(['id', 'logo', 'signature', 'default', 'created']);

/** A body class may list fields it refuses because they are only taken at creation. */
export interface BodyClass {
  new (): object;
  createOnly?: readonly string[];
}

/**
 * Validates a request body against its class: it must be a JSON object, every field must be one the
 * operation takes (never silently dropped), and every value must pass its rules (field-rules.ts).
 * All faults are reported together. Unknown names are refused and never copied, so names like
 * `__proto__` never reach the body handed on.
 */
@Injectable()
export class BodyValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const cls = metadata.metatype as BodyClass | undefined;
    if (metadata.type !== 'body' || !cls) return value;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw validationFailed([{ field: '(body)', message: 'the request body must be a JSON object' }]);
    }
    const fields = bodyFields(cls);
    const faults: FieldFault[] = [];
    const known: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(value)) {
      const field = fields.get(name);
      if (!field) {
        faults.push({ field: name, message: refusal(cls, name) });
        continue;
      }
      // Every field takes a scalar. A nested value is swapped for an empty one that fails the
      // field's rules the same way, so no rule ever walks a hostile depth.
      const scalar = typeof v === 'object' && v !== null ? {} : v;
      known[name] = field.normalize ? field.normalize(scalar) : scalar;
    }
    for (const [name, field] of fields) {
      for (const rule of field.rules) if (!rule.test(known[name], known)) faults.push({ field: name, message: rule.message(name, known[name]) });
    }
    if (faults.length) throw validationFailed(faults);
    return Object.assign(new cls(), known);
  }
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

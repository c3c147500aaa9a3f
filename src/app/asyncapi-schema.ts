/** A JSON Schema (draft 7, which AsyncAPI's schema format extends), as a plain object. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** The Standard JSON Schema interface a validator may carry beside Standard Schema's `validate` (zod 4 does). */
interface StandardJsonSchema {
  readonly jsonSchema?: {
    readonly input?: (options: { readonly target: string }) => Record<string, unknown>;
  };
}

/**
 * The JSON Schema of the messages a decoder takes: what its validator converts itself to through the
 * Standard JSON Schema interface (`~standard.jsonSchema.input`, target draft 7), or through a
 * `toJSONSchema()` method of its own; `undefined` when it has neither (a function of the raw bytes, a
 * `parse` object that cannot tell) or its conversion throws (a type JSON Schema cannot express).
 */
export function jsonSchemaOf(decoder: unknown): JsonSchema | undefined {
  if (decoder === null || (typeof decoder !== 'object' && typeof decoder !== 'function')) return undefined;
  const standard = (decoder as { '~standard'?: StandardJsonSchema })['~standard'];
  const own = (decoder as { toJSONSchema?: unknown }).toJSONSchema;
  try {
    const input = standard?.jsonSchema?.input;
    if (typeof input === 'function') return withoutDialect(input({ target: 'draft-07' }));
    if (typeof own === 'function') return withoutDialect((own as () => Record<string, unknown>).call(decoder));
  } catch {
    return undefined;
  }
  return undefined;
}

/** The schema without its `$schema` dialect: AsyncAPI's payload says its format itself. */
function withoutDialect(schema: Record<string, unknown>): JsonSchema {
  if (schema === null || typeof schema !== 'object') return {};
  const { $schema, ...rest } = schema;
  void $schema;
  return rest;
}

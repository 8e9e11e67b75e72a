// The conventional service's customers: class-validator DTOs, a better-sqlite3 repository (one
// table, one autocommit statement per write), and the controller. Written as a NestJS developer
// would write them without event sourcing; it shares no code with src/ (it is a yardstick).
import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  HttpException,
  Injectable,
  NotFoundException,
  Param,
  ParseUUIDPipe,
  Post,
  Put,
  Query,
  Res,
} from '@nestjs/common';
import type { Database } from 'better-sqlite3';
import { Type } from 'class-transformer';
import { IsEmail, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import type { Response } from 'express';
import { randomUUID } from 'node:crypto';
import { AccountId } from './plumbing';

const DIGITS = /^\d+$/;

export class UpdateCustomerDto {
  @IsOptional() @IsString() @MaxLength(255) name?: string;
  @IsOptional() @IsEmail() email?: string;
  @IsOptional() @Matches(/^09\d{9}$/) mobile?: string;
  @IsOptional() @IsString() @MaxLength(1000) address?: string;
  @IsOptional() @IsString() @MaxLength(255) company?: string;
  @IsOptional() @Matches(DIGITS) tel?: string;
}

export class CreateCustomerDto extends UpdateCustomerDto {
  @IsOptional() @Matches(DIGITS) postal_code?: string;
  @IsOptional() @Matches(DIGITS) fax?: string;
  @IsOptional() @Matches(DIGITS) registration_number?: string;
  @IsOptional() @Matches(DIGITS) economical_number?: string;
}

export class ListQueryDto {
  @IsOptional() @IsEmail() email?: string;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit = 10;
  @IsOptional() @Type(() => Number) @IsInt() @Min(0) offset = 0;
}

const FIELDS = ['name', 'email', 'mobile', 'address', 'postal_code', 'company', 'tel', 'fax', 'registration_number', 'economical_number'] as const;
const SHORT = ['name', 'company', 'address', 'tel', 'email', 'mobile'] as const;
type Row = Record<(typeof FIELDS)[number], string> & { id: string; account_id: string; version: number; created: number };

export const DATABASE = Symbol('database');

export function createSchema(db: Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS customers (
      id TEXT PRIMARY KEY, account_id TEXT NOT NULL, version INTEGER NOT NULL, created INTEGER NOT NULL,
      ${FIELDS.map((f) => `${f} TEXT NOT NULL DEFAULT ''`).join(', ')}
    );
    CREATE INDEX IF NOT EXISTS customers_by_account ON customers (account_id, created);
    CREATE INDEX IF NOT EXISTS customers_by_email ON customers (account_id, email, created);
  `);
}

@Injectable()
export class CustomersRepository {
  private readonly insert;
  private readonly selectOne;
  private readonly update;
  private readonly page;
  private readonly count;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO customers (id, account_id, version, created, ${FIELDS.join(', ')}) VALUES (@id, @account_id, 1, @created, ${FIELDS.map((f) => `@${f}`).join(', ')})`,
    );
    this.selectOne = db.prepare<[string, string], Row>('SELECT * FROM customers WHERE id = ? AND account_id = ?');
    this.update = db.prepare(
      `UPDATE customers SET version = version + 1, ${SHORT.map((f) => `${f} = coalesce(@${f}, ${f})`).join(', ')} WHERE id = @id AND account_id = @account_id`,
    );
    this.page = db.prepare<[string, string, number, number], Row>(
      'SELECT * FROM customers WHERE account_id = ? AND email = ? ORDER BY created DESC LIMIT ? OFFSET ?',
    );
    this.count = db.prepare<[string, string], { total: number }>('SELECT count(*) AS total FROM customers WHERE account_id = ? AND email = ?');
  }

  create(accountId: string, dto: CreateCustomerDto): Row {
    const row = { id: randomUUID(), account_id: accountId, created: Date.now(), version: 1 } as Row;
    for (const f of FIELDS) row[f] = dto[f] ?? '';
    this.insert.run(row);
    return row;
  }

  get(accountId: string, id: string): Row | undefined {
    return this.selectOne.get(id, accountId);
  }

  /** One statement, one commit. */
  change(accountId: string, id: string, dto: UpdateCustomerDto): Row | undefined {
    const params: Record<string, string | null> = { id, account_id: accountId };
    for (const f of SHORT) params[f] = dto[f] ?? null;
    return this.update.run(params).changes === 1 ? this.get(accountId, id) : undefined;
  }

  list(accountId: string, email: string, limit: number, offset: number): { rows: Row[]; total: number } {
    return { rows: this.page.all(accountId, email, limit, offset), total: this.count.get(accountId, email)!.total };
  }
}

const view = (row: Row, fields: readonly string[]) => {
  const out: Record<string, string | number> = { id: row.id };
  for (const f of fields) out[f] = row[f as keyof Row];
  out.created = row.created;
  return out;
};

const envelope = (data: unknown, status: number) => ({ data, success: true, status });

@Controller('v1/customers')
export class CustomersController {
  constructor(private readonly customers: CustomersRepository) {}

  @Post()
  @HttpCode(201)
  create(@AccountId() account: string, @Body() dto: CreateCustomerDto, @Res({ passthrough: true }) res: Response) {
    const row = this.customers.create(account, dto);
    res.setHeader('ETag', `"${row.version}"`);
    return envelope({ Customer: view(row, FIELDS) }, 201);
  }

  @Get()
  list(@AccountId() account: string, @Query() query: ListQueryDto, @Res({ passthrough: true }) res: Response) {
    const { rows, total } = this.customers.list(account, query.email ?? '', query.limit, query.offset);
    res.setHeader('X-Total-Count', String(total));
    return envelope(
      rows.map((row) => ({ Customer: view(row, SHORT) })),
      200,
    );
  }

  @Get(':id')
  read(@AccountId() account: string, @Param('id', ParseUUIDPipe) id: string, @Res({ passthrough: true }) res: Response) {
    const row = this.customers.get(account, id);
    if (!row) throw new NotFoundException('Customer not found');
    res.setHeader('ETag', `"${row.version}"`);
    return envelope([{ Customer: view(row, SHORT) }], 200);
  }

  @Put(':id')
  @HttpCode(200)
  update(
    @AccountId() account: string,
    @Param('id', ParseUUIDPipe) id: string,
    @Body() dto: UpdateCustomerDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    if (ifMatch !== undefined) {
      const current = this.customers.get(account, id);
      if (current && ifMatch !== `"${current.version}"`) throw new HttpException('The customer has changed since', 412);
    }
    const row = this.customers.change(account, id, dto);
    if (!row) throw new NotFoundException('Customer not found');
    res.setHeader('ETag', `"${row.version}"`);
    return envelope({ Customer: view(row, SHORT) }, 201);
  }
}

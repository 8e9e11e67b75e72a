/**
 * /v1/customers end to end, over HTTP only: docs/api.md ("Customers") and its rules.
 * One app serves the file; the describe that counts records exactly starts its own.
 */
import { randomUUID } from 'node:crypto';
import {
  contact,
  CUSTOMERS,
  expectCreatedNow,
  expectError,
  expectStatus,
  expectSuccess,
  LONGEST_EMAIL,
  Rec,
  ResourceSuite,
  SeededList,
  totalOf,
  uid,
  uniqueEmail,
  uniqueMobile,
  UUID_V4,
} from '../support/http-assertions';
import { freshApp } from '../support/test-app';

const CREATE_ONLY = ['postal_code', 'fax', 'registration_number', 'economical_number'];
const DIGIT_FIELDS = ['tel', ...CREATE_ONLY];
const TEXT_LIMITS: [string, number][] = [
  ['name', 255],
  ['company', 255],
  ['address', 1000],
];

/** What list, read and update answer for a customer as create answered it. */
const shortOf = CUSTOMERS.asRead;

const suite = new ResourceSuite(freshApp(), CUSTOMERS);
const { A, idsOf, expectListed } = suite;

describe('POST /v1/customers (create)', () => {
  it('answers 201 with all twelve fields; integer digit fields come back as digit strings', async () => {
    const body = {
      name: 'Jane Buyer',
      email: 'Jane@Buyer.example',
      mobile: '09121234567',
      address: '2 Market Road',
      postal_code: 1234567890,
      company: 'Buyer Ltd',
      tel: 2122334455,
      fax: 2122334466,
      registration_number: 10101,
      economical_number: 411122233344,
    };
    const res = await expectStatus(A.post(body), 201);
    expectSuccess(res, 201, {
      Customer: {
        ...body,
        postal_code: '1234567890',
        tel: '2122334455',
        fax: '2122334466',
        registration_number: '10101',
        economical_number: '411122233344',
        id: expect.stringMatching(UUID_V4),
        created: expect.any(Number),
      },
    });
    expectCreatedNow(res.body.data.Customer.created);
    // Answered from the write's own outcome: the same as a read of the record shows.
    const read = await expectStatus(A.get(res.body.data.Customer.id as string), 200);
    expect(read.body.data).toEqual([{ Customer: shortOf(res.body.data.Customer) }]);
    expect(read.headers.etag).toBe(res.headers.etag);
  });

  it.each(DIGIT_FIELDS)('keeps the leading zeros of %s sent as a string', async (field) => {
    const customer = await A.create({ ...contact(), [field]: '000120' });
    expect(customer[field]).toBe('000120');
  });

  it.each([
    ['only an e-mail address', () => ({ email: uniqueEmail() })],
    ['only a mobile number', () => ({ mobile: uniqueMobile() })],
  ])('takes %s and answers "" for every field not sent', async (_label, bodyOf) => {
    const body = bodyOf();
    const customer = await A.create(body);
    const empty = ['name', 'email', 'mobile', 'address', 'postal_code', 'company', 'tel', 'fax', 'registration_number', 'economical_number'];
    expect(customer).toEqual({
      ...Object.fromEntries(empty.map((f) => [f, ''])),
      ...body,
      id: expect.stringMatching(UUID_V4),
      created: expect.any(Number),
    });
  });

  it('takes mobile as an 11-digit integer and answers it as a string', async () => {
    const customer = await A.create({ mobile: 91212345678 });
    expect(customer.mobile).toBe('91212345678');
    expect((await A.read(customer.id as string)).mobile).toBe('91212345678');
  });

  it.each([
    ['Persian', '۰۹۱۲۱۲۳۴۵۶۷', '۰۲۱۸۸۷۷', '۰۱۲۳۴'],
    ['Arabic-Indic', '٠٩١٢١٢٣٤٥٦٧', '٠٢١٨٨٧٧', '٠١٢٣٤'],
    ['mixed', '09۱۲١٢3۴٥6۷', '0٢1۸8٧7', '0۱2٣4'],
  ])('takes %s digits in mobile and digit fields, and stores and answers them in ASCII', async (_label, mobile, tel, postal) => {
    const customer = await A.create({ mobile, tel, postal_code: postal });
    expect(customer).toMatchObject({ mobile: '09121234567', tel: '0218877', postal_code: '01234' });
    const updated = await expectStatus(A.put(customer.id as string, { tel: '۹۸۷', mobile: '٠٩٣٥١١١٢٢٣٣' }), 200);
    expect(updated.body.data.Customer).toMatchObject({ tel: '987', mobile: '09351112233' });
    expect(await A.read(customer.id as string)).toMatchObject({ tel: '987', mobile: '09351112233' });
  });

  it('tells an integer mobile that lost its leading zero to send a string', async () => {
    const res = await A.post({ mobile: 9121234567 });
    expectError(res, 400, 'VALIDATION_FAILED', ['mobile']);
    expect(res.body.error.details).toContainEqual({
      field: 'mobile',
      message: 'mobile must be exactly 11 digits; an integer loses its leading zero, so send it as a string, e.g. "09121234567"',
    });
  });

  it('stores strings exactly as sent', async () => {
    const name = '  Zoë Ünïcode — 株式会社  ';
    expect((await A.create({ ...contact(), name })).name).toBe(name);
  });

  it.each<[string, Rec]>([
    ['no field at all', {}],
    ['only other fields', { name: 'Nobody', company: 'Nowhere' }],
    ['both as ""', { name: 'Nobody', email: '', mobile: '' }],
    ['both as null', { name: 'Nobody', email: null, mobile: null }],
  ])('refuses %s without email or mobile: 400 naming both', async (_label, body) => {
    expectError(await A.post(body), 400, 'VALIDATION_FAILED', ['email', 'mobile']);
  });

  suite.itCreatesOnBothCollectionPaths();
  suite.itListsEachNewRecordAtOnce();
});

describe('GET /v1/customers (list)', () => {
  describe('order, paging, shape and X-Total-Count', () => {
    // Every other one has only a mobile and no optional field: its blanks show as "".
    const list = new SeededList(CUSTOMERS, (i) => (i % 2 ? { mobile: uniqueMobile() } : { name: `c${i}`, email: uniqueEmail(), postal_code: 12345 }));

    it('answers 200 with the short records, the 10 newest first by default, "" for no value', async () => {
      const res = await expectStatus(list.mine.list(), 200);
      expectSuccess(
        res,
        200,
        list
          .records()
          .slice(0, 10)
          .map((c) => ({ Customer: shortOf(c) })),
      );
      expect(totalOf(res)).toBe(25);
      const blank = res.body.data.find((w: { Customer: Rec }) => w.Customer.email === '').Customer;
      expect(blank).toMatchObject({ name: '', company: '', address: '', tel: '', email: '' });
    });

    list.itPagesTheList();

    it('answers the same on /v1/customers without and with a trailing slash', async () => {
      for (const path of ['customers', 'customers/']) {
        expect(idsOf(await expectStatus(list.mine.list({ limit: 100 }, path), 200))).toEqual(list.ids());
      }
    });

    list.itListsForTheAccountOnly();
  });

  describe('filters', () => {
    suite.itFiltersEmailExactly('buyer');

    it('matches mobile exactly', async () => {
      const mobile = uniqueMobile();
      const hit = await A.create({ mobile });
      await A.create({ mobile: `0913${mobile.slice(4)}` });
      await expectListed({ mobile }, [hit]);
      await expectListed({ mobile: mobile.slice(0, 10) }, []);
    });

    it('matches mobile given in Persian or Arabic-Indic digits', async () => {
      const mobile = uniqueMobile();
      const hit = await A.create({ mobile });
      const persian = mobile.replace(/\d/g, (d) => String.fromCharCode(0x06f0 + Number(d)));
      const arabicIndic = mobile.replace(/\d/g, (d) => String.fromCharCode(0x0660 + Number(d)));
      await expectListed({ mobile: persian }, [hit]);
      await expectListed({ mobile: arabicIndic }, [hit]);
    });

    it('matches company as a substring, ignoring case', async () => {
      const tag = uid('co');
      const trading = await A.create({ ...contact(), company: `Acme ${tag} Trading` });
      const holding = await A.create({ ...contact(), company: `${tag.toUpperCase()} Holding` });
      await A.create({ ...contact(), company: 'Unrelated Inc' });
      await expectListed({ company: `${tag.toUpperCase()} trading` }, [trading]);
      await expectListed({ company: tag }, [holding, trading]);
    });

    it('combines filters with AND', async () => {
      const email = uniqueEmail();
      const mobile = uniqueMobile();
      const tag = uid('and');
      const first = await A.create({ email, mobile });
      await A.create({ email, company: tag });
      const third = await A.create({ email, mobile, company: `${tag} Ltd` });
      await A.create({ email: uniqueEmail(), mobile, company: tag });
      await expectListed({ email, mobile }, [third, first]);
      await expectListed({ email, mobile, company: tag }, [third]);
    });

    suite.itCountsAndScopesFilteredLists();
  });
});

describe('GET /v1/customers/{id} (read one)', () => {
  suite.itReadsOne(() => ({ ...contact(), name: 'Read', mobile: uniqueMobile(), company: 'Co', tel: '021', postal_code: 99, fax: 98 }));
});

describe('unknown, malformed and foreign ids', () => {
  suite.itAnswers404ToBadIds();
});

describe('PUT /v1/customers/{id} (update)', () => {
  /** A customer with every field filled in. */
  const full = () => ({
    name: 'Full',
    email: uniqueEmail(),
    mobile: uniqueMobile(),
    address: 'Full Street 1',
    postal_code: '0123',
    company: 'Full Co',
    tel: '0215551234',
    fax: 5,
    registration_number: 6,
    economical_number: 7,
  });

  suite.itUpdatesTheFieldsSent(full);
  suite.itClearsFieldsSentEmpty(full, ['name', 'address', 'company', 'tel']);

  it('keeps leading zeros of a tel string and takes mobile as an integer', async () => {
    const { id } = await A.create(contact());
    const res = await expectStatus(A.put(id as string, { tel: '000123', mobile: 91200000001 }), 200);
    expect(res.body.data.Customer).toMatchObject({ tel: '000123', mobile: '91200000001' });
    expect(await A.read(id as string)).toMatchObject({ tel: '000123', mobile: '91200000001' });
  });

  suite.itAnswersUnchangedRecords(
    () => ({ name: 'Same', email: uniqueEmail(), mobile: '91200000002', tel: '0217' }),
    (c) => ({ name: c.name, email: c.email, mobile: Number(c.mobile), tel: c.tel }),
  );

  it.each<[string, () => Rec, Rec]>([
    ['clearing the only email with ""', () => ({ email: uniqueEmail() }), { email: '' }],
    ['clearing the only email with null', () => ({ email: uniqueEmail() }), { email: null }],
    ['clearing the only mobile', () => ({ mobile: uniqueMobile() }), { mobile: '' }],
    ['clearing both', () => ({ email: uniqueEmail(), mobile: uniqueMobile() }), { email: null, mobile: '' }],
  ])('refuses %s: 400 naming email and mobile, changing nothing', async (_label, initial, update) => {
    const before = await A.create({ ...initial(), name: 'Reachable' });
    expectError(await A.put(before.id as string, { ...update, name: 'changed' }), 400, 'VALIDATION_FAILED', ['email', 'mobile']);
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  it.each<[string, () => Rec, () => Rec]>([
    ['clearing the email while the mobile stays', () => ({ email: uniqueEmail(), mobile: uniqueMobile() }), () => ({ email: '' })],
    ['clearing the mobile while the email stays', () => ({ email: uniqueEmail(), mobile: uniqueMobile() }), () => ({ mobile: null })],
    ['swapping the email for a mobile in one request', () => ({ email: uniqueEmail() }), () => ({ email: '', mobile: uniqueMobile() })],
  ])('allows %s', async (_label, initial, updateOf) => {
    const before = await A.create(initial());
    const update = updateOf();
    const res = await expectStatus(A.put(before.id as string, update), 200);
    const expected = { ...shortOf(before), ...Object.fromEntries(Object.entries(update).map(([f, v]) => [f, v ?? ''])) };
    expect(res.body.data.Customer).toEqual(expected);
    expect(await A.read(before.id as string)).toEqual(expected);
  });

  it.each(CREATE_ONLY)('refuses the create-only field %s with 400 naming it, changing nothing', async (field) => {
    const before = await A.create(full());
    expectError(await A.put(before.id as string, { name: 'changed', [field]: '42' }), 400, 'VALIDATION_FAILED', [field]);
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  suite.itUpdatesThroughEitherPathAndToken();

  it('loses no update when 10 PUTs setting different fields race', async () => {
    const { id } = await A.create({ ...contact(), name: 'race' });
    const valueOf: Record<string, (i: number) => string> = {
      name: (i) => `Raced Name ${i}`,
      address: (i) => `Raced Street ${i}`,
      company: (i) => `Raced Co ${i}`,
      tel: (i) => `55501${i}`,
      email: (i) => `raced${i}@example.com`,
      mobile: (i) => `0912555000${i}`,
    };
    const fields = Object.keys(valueOf);
    const changes = Array.from({ length: 10 }, (_, i) => ({ field: fields[i % fields.length], value: valueOf[fields[i % fields.length]](i) }));
    const responses = await Promise.all(changes.map(({ field, value }) => A.put(id as string, { [field]: value })));
    expect(responses.map((r) => [r.status, r.body.status])).toEqual(responses.map(() => [200, 201]));
    const final = await A.read(id as string);
    for (const field of fields) {
      // A field sent twice ends with one of the two values; a lost update would leave the old one.
      expect(changes.filter((c) => c.field === field).map((c) => c.value)).toContain(final[field]);
    }
  });
});

describe('DELETE /v1/customers/{id} (delete)', () => {
  suite.itDeletes();
});

describe('field validation', () => {
  /** Valid contact fields, so that only the field under test is at fault. */
  const base = { email: 'valid@example.com', mobile: '09120000000' };
  suite.itRefusesInvalidValues({
    digitFields: DIGIT_FIELDS,
    more: [
      ['mobile', '0912123456'],
      ['mobile', '091212345678'],
      ['mobile', '0912-123-456'],
      ['mobile', ' 09121234567'],
      ['mobile', '۰۹۱۲۱۲۳۴۵۶'],
      ['mobile', '۰۹۱۲-۱۲۳-۴۵۶۷'],
      ['mobile', 9121234567],
      ['mobile', 912123456789],
      ['mobile', -9121234567],
      ['mobile', 91212345.67],
      ['mobile', true],
      ['name', 42],
      ['company', ['list']],
      ['address', { street: 'x' }],
    ],
    valid: () => base,
    updatable: (field) => !CREATE_ONLY.includes(field),
  });
  suite.itLimitsTextLengths(TEXT_LIMITS);

  it('takes the extreme valid values of digit fields, mobile and email', async () => {
    const body = { ...Object.fromEntries(DIGIT_FIELDS.map((f) => [f, '9'.repeat(20)])), email: LONGEST_EMAIL, mobile: '00000000000' };
    expect(body.email).toHaveLength(254);
    expect(await A.create(body)).toMatchObject(body);
    expect((await A.create({ mobile: 10000000000, tel: 0 })).mobile).toBe('10000000000');
  });

  suite.itRefusesUnknownFields(['id', 'created', 'logo', 'default', 'colour', 'Email'], contact);
  suite.itReportsEveryFault(
    (email) => ({ email, mobile: '123', tel: 'x', postal_code: -1, company: 'c'.repeat(256), id: randomUUID(), colour: 'blue' }),
    ['mobile', 'tel', 'postal_code', 'company', 'id', 'colour'],
  );

  it('reports every fault of one update', async () => {
    const before = await A.create(contact());
    const res = await A.put(before.id as string, { email: 'bad', tel: 'x', fax: 1, created: 1 });
    expectError(res, 400, 'VALIDATION_FAILED', ['email', 'tel', 'fax', 'created']);
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  it('refuses a body that is not a JSON object', async () => {
    expectError(await A.post([contact()]), 400, /^(VALIDATION_FAILED|MALFORMED_JSON)$/);
  });
});

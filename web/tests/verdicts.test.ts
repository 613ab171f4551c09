// The comparison page's words are kiln compare's: web/src/report/lib/verdict.ts (a port of
// crates/compare) judges the inputs crates/compare's tests/web_verdicts.rs wrote to
// fixtures/compare-verdicts.json, and must say what the command said of them — the
// overall line, every row's role, cells, verdicts and change, the analysis notes.
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { Judging } from '../src/report/data.js';
import { analysisNotes, FigureRun, judgeFigures, ProfileClause, unsureText } from '../src/report/lib/verdict.js';

interface SaidChange {
  verdict: string;
  quiet: string | null;
  unsure: string | null;
  text: string;
  percent: number | null;
  p: number | null;
  ci_pct: [number | null, number | null] | null;
}

interface Case {
  name: string;
  labels: string[];
  runs: { unit: string; rate: number | null; figures: Record<string, number> }[][];
  judging: Judging;
  profile: ProfileClause;
  said: {
    overall: { verdict: string; line: string };
    rows: { key: string; label: string; role: string; why: string | null; cells: string[]; changes: (SaidChange | null)[]; noise_pct: number }[];
    notes: string[];
  };
}

const FIXTURE: { cases: Case[] } = JSON.parse(readFileSync(new URL('../tests/fixtures/compare-verdicts.json', import.meta.url), 'utf8'));

const close = (a: number, b: number): boolean => a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

test('the fixture has the cases the page is held to', () => {
  const names = FIXTURE.cases.map((c) => c.name);
  for (const want of ['better', 'worse', 'mixed', 'no change', 'the profile changed', 'a busy-wait share shrinking']) assert.ok(names.some((n) => n.startsWith(want)), `a case "${want}…" in ${names}`);
});

for (const c of FIXTURE.cases) {
  test(`the page says what kiln compare says: ${c.name}`, () => {
    const runs: FigureRun[][] = c.runs.map((g) => g.map((r) => ({ unit: r.unit, rate: r.rate, figures: new Map(Object.entries(r.figures)) })));
    const got = judgeFigures(c.labels, runs, c.judging, c.profile);
    assert.equal(got.overall.line, c.said.overall.line, 'the overall line');
    assert.equal(got.overall.verdict, c.said.overall.verdict, 'the overall verdict');
    assert.deepEqual(
      got.rows.map((r) => r.key),
      c.said.rows.map((r) => r.key),
      'the same rows',
    );
    for (const [i, want] of c.said.rows.entries()) {
      const row = got.rows[i];
      const what = `row ${want.key}`;
      assert.equal(row.label, want.label, `${what}: label`);
      assert.equal(row.role, want.role, `${what}: role`);
      assert.equal(row.why, want.why, `${what}: why`);
      assert.deepEqual(row.cells, want.cells, `${what}: cells`);
      assert.ok(close(row.noise_pct, want.noise_pct), `${what}: noise ${row.noise_pct} against ${want.noise_pct}`);
      assert.equal(row.changes.length, want.changes.length, `${what}: a change per group`);
      for (const [g, w] of want.changes.entries()) {
        const ch = row.changes[g];
        if (w === null) {
          assert.equal(ch, null, `${what}, group ${g}: no change`);
          continue;
        }
        assert.ok(ch, `${what}, group ${g}: a change`);
        const v = ch.verdict;
        assert.equal(v.verdict, w.verdict, `${what}, group ${g}: verdict`);
        assert.equal(v.verdict === 'no_change' ? v.quiet : null, w.quiet, `${what}, group ${g}: why no change`);
        assert.equal(v.verdict === 'cannot_tell' ? unsureText(v.unsure) : null, w.unsure, `${what}, group ${g}: why it cannot tell`);
        assert.equal(row.changeTexts[g], w.text, `${what}, group ${g}: the change in words`);
        if (w.percent === null) assert.ok(!Number.isFinite(ch.percent), `${what}, group ${g}: a change from zero`);
        else assert.ok(close(ch.percent, w.percent), `${what}, group ${g}: ${ch.percent}% against ${w.percent}%`);
        assert.equal(ch.p === null, w.p === null, `${what}, group ${g}: a p-value or none`);
        if (ch.p !== null && w.p !== null) assert.ok(close(ch.p, w.p), `${what}, group ${g}: p ${ch.p} against ${w.p}`);
        assert.equal(ch.paired === null, w.ci_pct === null, `${what}, group ${g}: paired or not`);
        if (ch.paired && w.ci_pct)
          ch.paired.ci_pct.forEach((x, k) => {
            const y = w.ci_pct![k];
            assert.ok(y === null ? !Number.isFinite(x) : close(x, y), `${what}, group ${g}: interval ${ch.paired!.ci_pct} against ${w.ci_pct}`);
          });
      }
    }
    // The analysis of paired and unmatched groups, in the command's words.
    const notes = analysisNotes(c.labels, c.judging);
    c.labels.slice(1).forEach((_, k) => {
      if (c.judging.paired[k + 1] || c.judging.unmatched[k + 1]) assert.ok(c.said.notes.includes(notes[k]), `the note "${notes[k]}" among ${JSON.stringify(c.said.notes)}`);
    });
  });
}

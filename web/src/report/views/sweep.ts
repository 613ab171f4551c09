// A sweep's steps and its knee on the run page: one headline row per step (rate attempted
// and achieved, held or not, p50/p99, CPU per operation; a click selects the step's
// window), the knee marked, what kiln found there, and the differential flame graph of
// the windows before and after the knee one click away. Also the step boundaries every
// time chart draws (time-chart.ts calls drawStepBoundaries).
import { el } from '../../views/dom.js';
import { Knee } from '../data.js';
import { formatValue } from '../lib/format.js';

/** Where each step starts (after the first) and the last ends; the knee's end marked. */
export function stepBoundaries(k: Knee | null): { at: number; knee: boolean }[] {
  if (!k || !k.steps.length) return [];
  const out = k.steps.slice(1).map((s) => ({ at: s.start, knee: false }));
  out.push({ at: k.steps[k.steps.length - 1].end, knee: false });
  if (k.knee !== null) {
    const end = k.steps[k.knee].end;
    const b = out.find((x) => Math.abs(x.at - end) < 1e6);
    if (b) b.knee = true;
    else out.push({ at: end, knee: true });
  }
  return out;
}

/** Draws the step boundaries as vertical lines over a chart's plot. */
export function drawStepBoundaries(
  ctx: CanvasRenderingContext2D,
  steps: { at: number; knee: boolean }[] | undefined,
  x: (t: number) => number,
  left: number,
  right: number,
  plotH: number,
  dark: boolean,
): void {
  if (!steps) return;
  ctx.save();
  for (const s of steps) {
    const px = Math.round(x(s.at)) + 0.5;
    if (px < left || px > right) continue;
    ctx.strokeStyle = s.knee ? (dark ? '#ff8a80' : '#c62828') : dark ? 'rgba(255,255,255,0.35)' : 'rgba(0,0,0,0.3)';
    ctx.lineWidth = s.knee ? 2 : 1;
    ctx.setLineDash(s.knee ? [] : [3, 3]);
    ctx.beginPath();
    ctx.moveTo(px, 0);
    ctx.lineTo(px, plotH);
    ctx.stroke();
  }
  ctx.restore();
}

/**
 * The sweep's headline table and knee: rows select their step's window through `select`;
 * the knee's before/after diff viewer (mounted by the page's viewer bundle) sits in a
 * disclosure below.
 */
export function buildKnee(k: Knee, unit: string, select: (w: [number, number]) => void): HTMLElement {
  const table = el('table', { class: 'r-table', 'data-table': 'sweep-steps' });
  table.append(
    el('thead', {}, el('tr', {}, ...['step', 'attempted', 'achieved', 'held', 'p50', 'p99', `CPU per ${unit}`].map((h) => el('th', { scope: 'col', text: h })))),
  );
  const body = el('tbody');
  k.steps.forEach((s, i) => {
    const isKnee = k.knee === i;
    const name = el('button', { type: 'button', class: 'r-step', title: `Select the window of ${s.name}`, text: isKnee ? `${s.name} ◀ knee` : s.name });
    name.addEventListener('click', () => select([s.start, s.end]));
    body.append(
      el(
        'tr',
        { 'data-step': s.name, ...(isKnee ? { 'data-knee': '1', class: 'r-knee' } : {}) },
        el('td', {}, name),
        el('td', { text: formatValue(s.attempted, `${unit}/s`) }),
        el('td', { text: formatValue(s.achieved, `${unit}/s`) }),
        el('td', { text: s.held ?? '–' }),
        el('td', { text: formatValue(s.p50_us, 'us') }),
        el('td', { text: formatValue(s.p99_us, 'us') }),
        el('td', { text: formatValue(s.cpu_per_op_us, 'us') }),
      ),
    );
  });
  table.append(body);
  const parts: HTMLElement[] = [el('p', { class: 'r-overall', 'data-field': 'knee', text: k.finding }), table];
  if (k.diff) {
    const mount = document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(k.diff.key)}"]`);
    parts.push(el('details', { class: 'r-knee-diff', 'data-field': 'knee-diff' }, el('summary', { text: k.diff.title }), ...(k.diff.line ? [el('p', { text: k.diff.line })] : []), mount));
  }
  return el('div', { class: 'r-knee-block' }, ...parts);
}

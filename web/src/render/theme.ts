// Colours the canvases need, for light and dark pages (prefers-color-scheme). Frame
// colours are the palettes' in both: they are light enough for black labels.

export interface Theme {
  dark: boolean;
  background: string;
  /** Label text on frames (frames are light in every palette). */
  frameText: string;
  /** Text drawn on the background (lane names, axis labels). */
  text: string;
  muted: string;
  grid: string;
  /** Outline of the frame selected with the keyboard. */
  focus: string;
  /** Opacity of frames the search does not match, and of a zoomed frame's ancestors. */
  dimAlpha: number;
  fadeAlpha: number;
  /** Time strip bars and selection. */
  bar: string;
  selection: string;
  laneHeader: string;
}

const LIGHT: Theme = {
  dark: false, background: '#ffffff', frameText: '#000000', text: '#222222', muted: '#666666', grid: '#e4e4e4',
  focus: '#1a4fd0', dimAlpha: 0.22, fadeAlpha: 0.55, bar: 'rgb(90,110,170)', selection: 'rgba(255,170,0,0.35)', laneHeader: '#f1f1f4',
};

const DARK: Theme = {
  dark: true, background: '#17181c', frameText: '#000000', text: '#e4e4e8', muted: '#a0a0aa', grid: '#33353c',
  focus: '#7fb0ff', dimAlpha: 0.25, fadeAlpha: 0.5, bar: 'rgb(120,150,220)', selection: 'rgba(255,170,0,0.3)', laneHeader: '#23252b',
};

const query = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null;

export function currentTheme(): Theme {
  return query?.matches ? DARK : LIGHT;
}

/** Calls `f` when the page switches between light and dark. */
export function onThemeChange(f: () => void): void {
  query?.addEventListener('change', f);
}

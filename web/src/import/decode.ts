// Reads the profile the HTML embeds: base64 (no '<', so it cannot end its <script>),
// optionally deflate-compressed, then the binary layout of crates/viewer/src/encode.rs.
import { RawProfile } from '../lib/profile.js';

export const MAGIC = 0x3156_4e4b; // "KNV1" little-endian
export const VERSION = 2;

/** A problem with the embedded data, shown to the user instead of a blank page. */
export class DecodeError extends Error {}

type FromBase64 = { fromBase64?: (s: string) => Uint8Array };

export function base64ToBytes(b64: string): Uint8Array {
  // The browser's own decoder where it has one (no 10 MB intermediate string).
  const U8 = Uint8Array as unknown as FromBase64;
  if (U8.fromBase64) {
    try {
      return U8.fromBase64(b64);
    } catch {
      throw new DecodeError('the embedded profile is not valid base64');
    }
  }
  let bin: string;
  try {
    bin = atob(b64.replace(/\s+/g, ''));
  } catch {
    throw new DecodeError('the embedded profile is not valid base64');
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export async function inflate(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
  try {
    return new Uint8Array(await new Response(stream).arrayBuffer());
  } catch (e) {
    throw new DecodeError(`the embedded profile could not be decompressed: ${String(e)}`);
  }
}

/** Prefix sums in place (wrapping at 2^32), undoing the encoder's differences. */
function undelta(a: Uint32Array): Uint32Array {
  let v = 0;
  for (let i = 0; i < a.length; i++) a[i] = v = (v + a[i]) >>> 0;
  return a;
}

/** Parses the binary layout; every length is checked against the buffer first. */
export function decodeProfile(bytes: Uint8Array): RawProfile {
  const buf = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const ab = buf.buffer;
  const base = buf.byteOffset;
  const end = base + buf.byteLength;
  if (buf.byteLength < 48) throw new DecodeError(`the embedded profile is truncated (${buf.byteLength} bytes)`);
  const h = new Uint32Array(ab, base, 10);
  if (h[0] !== MAGIC) throw new DecodeError('the embedded data is not a kiln profile (bad magic)');
  if (h[1] !== VERSION) throw new DecodeError(`the embedded profile has version ${h[1]}; this viewer reads version ${VERSION}`);
  const [flags, nStr, nFr, nSt, nSa, nTh, textBytes] = [h[2], h[3], h[4], h[5], h[6], h[7], h[8]];
  const timeOrigin = new Float64Array(ab, base + 40, 1)[0];
  let off = base + 48;
  const align = (): void => {
    off = (off + 7) & ~7;
  };
  const take = (bytesNeeded: number, what: string): number => {
    if (off + bytesNeeded > end) throw new DecodeError(`the embedded profile is truncated in ${what}`);
    const at = off;
    off += bytesNeeded;
    align();
    return at;
  };
  const u32 = (n: number, what: string) => new Uint32Array(ab, take(n * 4, what), n);
  const i32 = (n: number, what: string) => new Int32Array(ab, take(n * 4, what), n);
  const f64 = (n: number, what: string) => new Float64Array(ab, take(n * 8, what), n);
  const textAt = take(textBytes, 'names');
  const text = new TextDecoder('utf-8').decode(new Uint8Array(ab, textAt, textBytes));
  const lengths = u32(nStr, 'name lengths');
  const strings = new Array<string>(nStr);
  let pos = 0;
  for (let i = 0; i < nStr; i++) {
    const end = pos + lengths[i];
    strings[i] = text.slice(pos, end);
    pos = end;
  }
  if (pos !== text.length) throw new DecodeError(`the names add up to ${pos} characters, the text has ${text.length}`);
  const frameName = undelta(u32(nFr, 'frames'));
  const frameKind = new Uint8Array(ab, take(nFr, 'frame kinds'), nFr);
  let frameOrder: Uint32Array;
  if (flags & 128) {
    // Frames come in name order: each one's rank is its index.
    frameOrder = new Uint32Array(nFr);
    for (let i = 0; i < nFr; i++) frameOrder[i] = i;
  } else frameOrder = u32(nFr, 'frame order');
  let stackParent: Int32Array;
  let stackDepth: Uint8Array | null = null;
  if (flags & 64) {
    // Depths of a depth-first order: a node's parent is the last node one level up.
    stackDepth = new Uint8Array(ab, take(nSt, 'stack depths'), nSt);
    stackParent = new Int32Array(nSt);
  } else stackParent = i32(nSt, 'stack parents');
  const stackFrame = u32(nSt, 'stack frames');
  if (stackDepth) {
    const last = new Int32Array(257).fill(-1);
    for (let i = 0; i < nSt; i++) {
      const d = stackDepth[i];
      const p = d === 0 ? -1 : last[d - 1];
      if (d > 0 && (p < 0 || (i > 0 && d > stackDepth[i - 1] + 1))) throw new DecodeError(`stack ${i} has depth ${d} below no parent`);
      stackParent[i] = p;
      last[d] = i;
      if (stackFrame[i] >= nFr) throw new DecodeError(`stack ${i} has frame ${stackFrame[i]} of ${nFr}`);
    }
  } else {
    // Parents are stored as index minus parent, 0 for roots; one pass restores and checks.
    for (let i = 0; i < nSt; i++) {
      const d = stackParent[i];
      if (d < 0 || d > i) throw new DecodeError(`stack ${i} has parent ${i - d}, not an earlier stack`);
      stackParent[i] = d === 0 ? -1 : i - d;
      if (stackFrame[i] >= nFr) throw new DecodeError(`stack ${i} has frame ${stackFrame[i]} of ${nFr}`);
    }
  }
  const sampleStack = undelta(u32(nSa, 'sample stacks'));
  const sampleWeight = flags & 32 ? Float64Array.from(u32(nSa, 'sample weights')) : f64(nSa, 'sample weights');
  const sampleCount = flags & 4 ? (flags & 16 ? sampleWeight : f64(nSa, 'sample counts')) : null;
  const sampleTime = flags & 1 ? f64(nSa, 'sample times') : null;
  const sampleThread = flags & 2 ? i32(nSa, 'sample threads') : null;
  const threadName = u32(nTh, 'threads');
  const threadTid = i32(nTh, 'thread ids');
  // Indices are checked once here so later code can trust them.
  for (let i = 0; i < nFr; i++) if (frameName[i] >= nStr) throw new DecodeError(`frame ${i} names string ${frameName[i]} of ${nStr}`);
  for (let i = 0; i < nSa; i++) if (sampleStack[i] >= nSt) throw new DecodeError(`sample ${i} has stack ${sampleStack[i]} of ${nSt}`);
  if (sampleThread) for (let i = 0; i < nSa; i++) if (sampleThread[i] >= nTh) throw new DecodeError(`sample ${i} has thread ${sampleThread[i]} of ${nTh}`);
  for (let i = 0; i < nTh; i++) if (threadName[i] >= nStr) throw new DecodeError(`thread ${i} names string ${threadName[i]} of ${nStr}`);
  return {
    strings, frameName, frameKind, frameOrder, stackParent, stackFrame,
    sampleStack, sampleWeight, sampleCount, sampleTime, sampleThread, threadName, threadTid, timeOrigin,
    stacksInNameOrder: (flags & 8) !== 0,
    stackDepth,
  };
}

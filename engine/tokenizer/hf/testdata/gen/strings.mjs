// The parity test strings: hand-picked hard cases plus strings generated from a fixed seed, so the same
// script always writes the same fixtures. Every string is valid Unicode (no lone surrogates), so it is also
// valid UTF-8 once written as JSON.

// mulberry32: a tiny seeded PRNG; Math.random cannot be seeded.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = ['the', 'The', 'THE', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'Hello', 'world',
  'tokenizer', 'Tokenization', 'internationalization', 'naïve', 'café', 'résumé', 'Zürich', 'straße', 'ĲSSEL',
  'don\'t', 'I\'M', 'YOU\'LL', 'it\'S', 'we\'Re', 'they\'VE', 'she\'d', 'O\'Neil', 'rock\'n\'roll', 'a', 'I', 'x',
  'GPU', 'CamelCaseWord', 'snake_case_word', 'kebab-case-word', 'e-mail', 'U.S.A.', 'e.g.', 'i.e.', 'etc.',
  'Mr.', 'São', 'Paulo', 'Ελληνικά', 'русский', 'язык', 'Ǆemal', 'ǅ', 'İstanbul', 'ﬁnance', 'ＡＢＣ'];

const code = [
  'func main() {\n\tfmt.Println("hello, 世界")\n}\n',
  'for i := 0; i < len(xs); i++ {\n\t\tsum += xs[i] * 2\n\t}',
  'def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
  'class Foo(object):\n    """Docstring."""\n\n    def __init__(self):\n        self._x = {\'a\': 1}\n',
  'const add = (a, b) => a + b;\nconsole.log(`${add(1, 2)}`);',
  'export async function* gen(): AsyncGenerator<number> { yield* [1, 2, 3]; }',
  'fn main() -> Result<(), Box<dyn std::error::Error>> {\n    let v: Vec<u8> = vec![0xFF; 16];\n    Ok(())\n}',
  '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); return 0; }',
  'template<typename T> std::vector<T> f(const T& x) { return {x, x}; }',
  'public static void main(String[] args) throws Exception { System.out.println(args.length); }',
  'SELECT id, name FROM users WHERE created_at >= NOW() - INTERVAL \'7 days\' ORDER BY id DESC;',
  '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"></head><body><p class=\'x\'>Hi &amp; bye</p></body></html>',
  '.btn:hover { color: #ff00aa; margin: 0 auto !important; }',
  '{"name": "trainyard", "version": 1, "tags": ["a", "b"], "nested": {"ok": true, "n": null}}',
  'apiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n  labels:\n    app: web\n',
  '#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do echo "$f" | tr a-z A-Z; done 2>&1 >/dev/null',
  'main :: IO ()\nmain = mapM_ print [x * x | x <- [1..10], even x]',
  '(defun square (x) (* x x))',
  '^(?:[a-z0-9!#$%&\'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&\'*+/=?^_`{|}~-]+)*)@$',
  '| col a | col b |\n|-------|:-----:|\n| 1     |   2   |',
  '\\begin{equation} E = mc^2 \\quad \\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2} \\end{equation}',
  'if (x != null && y !== undefined || z >= 10) { x ??= y?.z ?? 0; }',
  '    indented with four spaces\n        and eight\n\t\tand two tabs',
  'x=1;y=2;;z=x<<2|y>>>1&~0^0xff',
  'git commit -m "fix: handle \\r\\n" && git push origin HEAD:refs/for/main',
];

const emoji = ['😀', '👍', '👍🏽', '👩🏿‍🔬', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵', '🇺🇸🇬🇧', '1️⃣', '#️⃣', '❤️', '❤', '☺️',
  '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '🧑‍🤝‍🧑', '🤷‍♀️', '🫠', '🥹', '🦀', '🐍', '👁️‍🗨️', '🙌🏻🙌🏼🙌🏽🙌🏾🙌🏿', '‼️', '©️', '™', '🀄', '🃏'];

const scripts = [
  '你好，世界！这是一个测试。', '我们今天去北京吃烤鸭吧', '機器學習與自然語言處理', '日本語のテキストとカタカナ', 'ｶﾀｶﾅﾊﾝｶｸ',
  'ひらがな、カタカナ、漢字。', '한국어 텍스트입니다', '안녕하세요', 'ᄒᆞᆫ글 자모', 'مرحبا بالعالم', 'اَلْعَرَبِيَّةُ',
  'שָׁלוֹם עוֹלָם', 'नमस्ते दुनिया', 'हिन्दी भाषा में क्षत्रिय', 'สวัสดีชาวโลก', 'ภาษาไทยไม่มีช่องว่าง', 'தமிழ் மொழி',
  'বাংলা ভাষা', 'Ελληνικά με τόνους', 'Привет, мир!', 'Հայերեն', 'ქართული', 'ኢትዮጵያ', 'ភាសាខ្មែរ', 'မြန်မာ',
  'བོད་ཡིག', 'ᠮᠣᠩᠭᠣᠯ', 'ᏣᎳᎩ', 'Tiếng Việt có dấu', 'Ꭰ', '𝕳𝖊𝖑𝖑𝖔 𝖜𝖔𝖗𝖑𝖉', '𝐀𝐁𝐂 𝟏𝟐𝟑', 'ᚠᛇᚻ ᛒᛦᚦ', '𐌰𐌱𐌲',
];

const combining = ['e\u0301', 'a\u0300\u0316', 'A\u030A', '\u212B', 'Z\u0351\u0302\u0327\u0320', '\u0301start',
  'n\u0303o\u0308', 'o\u0308\u0304', '\u1100\u1161\u11A8', 'i\u0307', 'q\u0307\u0323', '\uFB01', '\u2460', '\u00BD',
  '\u2163', '\u3392', 'Å', 'é', 'ñ', '\u0915\u094D\u0937', 'ष\u093F', '\u0E01\u0E34\u0E4A', 'Ǳ', 'ﬀ', '\u1E9B\u0323'];

const spaces = [' ', '  ', '   ', '    ', '\t', '\t\t', '\n', '\n\n', '\n\n\n', '\r\n', '\r\n\r\n', '\r', ' \n',
  '\n ', ' \n ', '\t \n', ' \t\n\t ', '\u00A0', '\u3000', '\u2028', '\u2029', '\u0085', '\u000B', '\u000C',
  '\u2009', '\u202F', '\u205F', '\u1680', '\u200B', '\uFEFF', '\u180E', ' \u00A0 ', '\n\u3000\n'];

const contractions = ['\'s', '\'S', '\'t', '\'T', '\'re', '\'RE', '\'Re', '\'rE', '\'ve', '\'VE', '\'m', '\'M',
  '\'ll', '\'LL', '\'Ll', '\'d', '\'D', '\'\u017F', '\'\u017Ft', '\u2019s', '\'\'s', '\'', '\'x', '\'sS', '\'lL',
  '\'\u0130', '\'K', '\'\u212A'];

const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|object_ref_start|>', '<|box_end|>',
  '<|vision_pad|>', '<tool_call>', '</tool_call>', '<think>', '</think>', '<|fim_prefix|>', '<|file_sep|>',
  '<tool_response>', '<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>', '<|end_header_id|>',
  '<|eot_id|>', '<|reserved_special_token_0|>', '<|reserved_special_token_250|>', '<|python_tag|>',
  '<|im_start', 'im_start|>', '<|im_end|', '<||im_end||>', '<|IM_START|>', '< |im_start| >', '<|<|im_end|>|>',
  '<|im_start|><|im_end|>', '<thinking>', '<think></think>', '<|endoftext|>\n', '<|eot_id|><|eot_id|>'];

const odd = ['\u0000', '\u0001', '\u001F', '\u007F', '\u0080', '\u009F', '\uFFFD', '\uFFFE', '\uFFFF', '\uE000',
  '\u{10FFFF}', '\u{E0001}', '\u{1D7CE}', 'ß', 'İ', 'ı', 'ǅ', '\u00AD', '\u200D', '\u200C', '\u2066', '\u202E',
  '\uFE0F', '\u{1F3FB}', '\u{1D400}', '\u{20000}', '\u{2A6DF}', '\u{30000}', '\u{1F9FF}', '\u0600', '\u061C',
  '\u{11DE0}', '\u{16FF4}', '\u0F33', '\u2189', '\u{1FBF0}'];

function digits(r) {
  const n = 1 + Math.floor(r() * r() * 40);
  let s = '';
  for (let i = 0; i < n; i++) s += String(Math.floor(r() * 10));
  const forms = [s, `-${s}`, `${s}.${s.slice(0, 3)}`, `${s},000`, `0x${s}`, `${s}e-9`, `$${s}`, `${s}%`, `v${s}.1.2`];
  return forms[Math.floor(r() * forms.length)];
}

const otherDigits = ['٠١٢٣٤٥٦٧٨٩', '۱۲۳', '१२३४', '১২৩', '๑๒๓', '１２３４５', '²³¹', '½¼¾', 'ⅫⅣ', '①②③', '𝟘𝟙𝟚',
  '12345678901234567890', '3.14159265358979', '1,000,000', '2024-01-31T12:34:56Z', '+1 (555) 010-9999',
  '192.168.0.1', '1e10', '007', '0.0001', '٣.١٤'];

function longWord(r) {
  const n = 200 + Math.floor(r() * 2800);
  const kind = Math.floor(r() * 12);
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const rep = (s, k) => s.repeat(Math.max(1, Math.floor(k)));
  switch (kind) {
    case 0: return rep('a', n);
    case 1: return rep('ab', n / 2);
    case 2: { let s = ''; for (let i = 0; i < n; i++) s += letters[Math.floor(r() * 26)]; return s; }
    case 3: return 'https://example.com/' + rep('path/segment-', n / 13) + '?q=' + rep('x', 40) + '#frag';
    case 4: { const b = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'; let s = '';
      for (let i = 0; i < n; i++) s += b[Math.floor(r() * 64)]; return s + '=='; }
    case 5: return rep('9', n);
    case 6: return rep(' ', n);
    case 7: return rep('\n', n / 4);
    case 8: return rep('=', n);
    case 9: return rep('😀', n / 8);
    case 10: return rep('漢字', n / 6);
    default: return rep('Supercalifragilisticexpialidocious', n / 34);
  }
}

const pools = [
  [10, r => pick(r, words)],
  [6, r => pick(r, code)],
  [4, r => pick(r, emoji)],
  [5, r => pick(r, scripts)],
  [3, r => pick(r, combining)],
  [6, r => pick(r, spaces)],
  [3, r => pick(r, contractions)],
  [4, r => pick(r, specials)],
  [2, r => pick(r, odd)],
  [4, r => digits(r)],
  [2, r => pick(r, otherDigits)],
  [1, r => longWord(r)],
];
const poolTotal = pools.reduce((a, [w]) => a + w, 0);

function pick(r, xs) { return xs[Math.floor(r() * xs.length)]; }

function fragment(r) {
  let x = r() * poolTotal;
  for (const [w, f] of pools) {
    if (x < w) return f(r);
    x -= w;
  }
  return pools[0][1](r);
}

const separators = ['', ' ', ' ', ' ', '', '\n', ', ', '. ', '  ', '\t', '\r\n', '-', '_', '/', ': ', '"', '\''];

// The hand-picked cases: each names a behaviour that a careless implementation gets wrong.
const hard = [
  '', ' ', '  ', '\n', '\r\n', '\t', 'a', 'A', '0', '00', '000', '0000', '12345', '123456789', ' 1', '  12',
  'Hello world', ' Hello world', 'Hello  world', 'Hello   world', 'Hello \n world', 'Hello\n\nworld', 'trailing   ',
  'trailing \n', 'a\r\nb\r\n\r\nc', 'x \t y', 'x\t\t\ty', 'line1\n    indented\n\tTabbed\n', '\n\n\n\nfour',
  ' \n \n \n', '   \n\n   x', 'don\'t', 'DON\'T', 'I\'m', 'I\'M', 'you\'ll', 'YOU\'LL', 'she\'S', 'it\'s\'s',
  'they\'re\'ve', '\'s', '\'\'', '\'\u017F', 'x\'\u017F', 'x\'\u212A', 'rock \'n\' roll', '\'tis', ' \'s',
  'hello\'world', 'foo \'bar\'', '<|im_start|>', '<|im_start|>user\nhi<|im_end|>\n', 'a<|im_end|>b',
  ' <|im_end|> ', '<|im_end|><|im_end|>', '<|im_end|', '<|im_start|>system\nYou are helpful.<|im_end|>\n',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>', '<|eot_id|>', '<think>\n\n</think>\n\n',
  'text<think>reason</think>answer', '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
  '<|endoftext|>', '<|endoftext|><|endoftext|>', '<|reserved_special_token_5|>', '<|reserved_special_token_999|>',
  '👨‍👩‍👧‍👦', '👍🏽👍🏽', '🇯🇵🇺🇸', '1️⃣2️⃣', 'e\u0301', 'é', '\u0301', 'a\u0301\u0301\u0301', '\u212B', 'Å',
  '한국어', '\u1112\u1161\u11AB', '你好', '你好世界', '  你好', '日本語', 'ｶﾀｶﾅ', 'مرحبا', 'नमस्ते', 'สวัสดี',
  '٠١٢٣', '१२३', '１２３', '²', '½', 'Ⅻ', '①', '𝟘', '\u{11DE0}\u{11DE1}', '\u{16FF4}', 'x²', '3½', 'H₂O',
  '\u00A0', 'a\u00A0b', 'a\u3000b', 'a\u2028b', 'a\u0085b', 'a\u000Bb', 'a\u000Cb', 'a\u200Bb', 'a\uFEFFb',
  '\uFEFFbom', 'a\u180Eb', 'a \u00A0b', 'a\u00A0 b', '\u00A0\u00A0x', '\u3000\u3000', '\u0000', 'a\u0000b',
  '\uFFFD', '\uFFFD\uFFFD', '\uFFFF', '\u{10FFFF}', '\uE000', '\u{E0001}', '\u202Eevil\u202C', 'ß', 'ẞ', 'İi',
  'ǅǄǆ', 'ﬁ', '\u00AD', 'x\u200Dy', 'ab\u0300c', '!!!', '...', '?!', ' !', ' ...', '!\n', '!\r\n\r\n', ' ?\n\n',
  '--', ' --', '__init__', '->', '=>', '!==', '&&', '::', '#include', '@decorator', '$var', '%d', '^_^', '~/',
  'https://example.com/a?b=c&d=e#f', 'user@example.com', '1,000.50', '$1,000,000', '3.14', '-0.5e-10', 'v1.2.3',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  ' '.repeat(300), '\n'.repeat(100), ' \n'.repeat(50), 'a'.repeat(1000), '9'.repeat(257), 'ab'.repeat(300),
  '😀'.repeat(100), '漢'.repeat(300), 'x'.repeat(255), 'y'.repeat(256), 'z'.repeat(257),
  'The Quick Brown Fox Jumps Over The Lazy Dog 1234567890 times!',
  'Mixed: English, 中文, 日本語, 한국어, العربية, हिन्दी, ไทย, русский — and emoji 🎉.',
  '\tdef f(x):\r\n\t\treturn x  # comment\r\n',
  'ĠĊ', 'Ġhello', 'âĢĻ', 'ĉ', 'Ā', 'ÿ', 'Ã©', 'x Ġ<sp>Ġ y <sp> z', ' <sp> ', '<think> x <think>x',
  'a <tool_call>  b  </tool_call>', '\uFB01x \uFB01X fix', '<|im_start|>  <|im_end|>  <|im_end|>', '</think>',
];

// The hand-picked cases of SentencePiece-style tokenizers (Gemma, Llama 2): the metaspace character typed
// in the text, byte-fallback tokens spelled out, their special tokens, and the one Gemma token that joins
// two words ("> </"), which is where splitting words apart would go wrong.
const sentencePieceHard = [
  '\u2581', '\u2581\u2581', '\u2581hello', 'hello\u2581world', ' \u2581 ', '<0x41>', '<0x0A>', '<0xE4><0xBD>',
  '<s>', '</s>', '<unk>', '<s>hi</s>', ' <s> hi </s> ', '<s><s>', 'a</s>b', '<bos>', '<eos>', '<pad>', '<mask>',
  '<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n', '<start_of_turn>', '<end_of_turn>',
  '<start_of_image>', '<image_soft_token>', '[multimodal]', '<unused0>', '<unused98>', '<b>x</b> </i>', '> </',
  'a> </b', '<p> </p>', '>  </', '>\u2581</', 'x >  </ y', '\u{1F9FF}\u{1F9FF}', '\u{E0001} x', '\t \t', ' \n ',
  'x ' + '\u{10FFFF}', '  leading and trailing  ', '\u00A0\u2581\u00A0',
];

// The special tokens of Gemma 3 and Llama 2, mixed into generated strings for their fixtures.
const sentencePieceSpecials = ['<s>', '</s>', '<unk>', '<bos>', '<eos>', '<pad>', '<mask>', '<start_of_turn>',
  '<end_of_turn>', '<start_of_image>', '<end_of_image>', '<image_soft_token>', '[multimodal]', '<unused7>',
  '<0x20>', '<0xFF>', '\u2581', '> </', '<start_of_turn', 'end_of_turn>'];

// testStrings returns count strings: the hand-picked cases, then strings generated from seed. With
// sentencePiece set, the SentencePiece cases come first and the generator's special-token pool also holds
// Gemma's and Llama 2's tokens (without it, the output is what it has always been, so the existing fixtures
// stay the same).
export function testStrings(seed, count, { sentencePiece = false } = {}) {
  const r = prng(seed);
  const out = sentencePiece ? [...sentencePieceHard, ...hard] : [...hard];
  const saved = specials.length;
  if (sentencePiece) specials.push(...sentencePieceSpecials);
  try {
    while (out.length < count) {
      const n = 1 + Math.floor(r() * 10);
      let s = '';
      for (let i = 0; i < n; i++) {
        if (i > 0) s += pick(r, separators);
        s += fragment(r);
      }
      out.push(s);
    }
  } finally {
    specials.length = saved;
  }
  return out;
}

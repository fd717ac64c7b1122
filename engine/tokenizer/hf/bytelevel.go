package hf

// GPT-2's byte-to-unicode table: byte-level BPE vocabularies spell every byte as one printable character so
// that no token contains whitespace or control characters. Printable Latin-1 bytes stand for themselves; the
// other 68 bytes take the code points from U+0100 on, in byte order.
var (
	byteRune  [256]rune   // byte → the character that spells it in the vocabulary
	byteSpell [256]string // byteRune as UTF-8, to build vocabulary keys without re-encoding
	runeByte  [0x144]int16
)

func init() {
	for i := range runeByte {
		runeByte[i] = -1
	}
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = next
			next++
		}
		byteRune[b] = r
		byteSpell[b] = string(r)
		runeByte[r] = int16(b)
	}
}

// appendSpelled appends the raw bytes a vocabulary token stands for, as the ByteLevel decoder computes them:
// every character mapped back through the table, or, when any character is not in the table (added tokens
// such as "<|im_start|>" are, tokens with other characters are not), the token's own UTF-8 bytes.
func appendSpelled(dst []byte, tok string) []byte {
	n := len(dst)
	for _, r := range tok {
		if r >= rune(len(runeByte)) || runeByte[r] < 0 {
			return append(dst[:n], tok...)
		}
		dst = append(dst, byte(runeByte[r]))
	}
	return dst
}

// spellOnly reports whether every character of tok is in the byte table, that is whether the BPE model can
// ever produce tok from byte-level pieces.
func spellOnly(tok string) bool {
	for _, r := range tok {
		if r >= rune(len(runeByte)) || runeByte[r] < 0 {
			return false
		}
	}
	return true
}

package serving

// jsonMachine recognises one JSON object byte by byte (RFC 8259, UTF-8 checked), so sampling can be
// constrained to produce valid JSON: before each token the sampler asks which bytes may follow. It is a
// small value type — the container stack is an immutable string — so trying every candidate byte on a copy
// is cheap and never disturbs the original. cost reports how many more bytes the shortest completion
// needs, which lets a constraint close the object before the token budget runs out.
type jsonMachine struct {
	state jsonState
	stack string // open containers, '{' or '[', innermost last
	key   bool   // the string being read is an object key
	// utf8Left counts the continuation bytes still expected in a string; lo..hi bounds the next one.
	utf8Left uint8
	lo, hi   byte
	hexLeft  uint8  // hex digits left in a \uXXXX escape
	digits   uint8  // digits of the integer part or of the exponent read so far
	lit      string // rest of true/false/null
	ws       uint8  // consecutive whitespace bytes, capped so a model cannot stall in blanks
}

type jsonState uint8

const (
	jStart       jsonState = iota // nothing read; the root must be an object
	jValue                        // a value is expected
	jObjectStart                  // after '{': a key or '}'
	jKey                          // after ',' in an object: a key
	jColon                        // after a key: ':'
	jArrayStart                   // after '[': a value or ']'
	jAfter                        // after a value: ',' or a closing bracket, or done at the root
	jString
	jEscape
	jUnicode
	jLiteral
	jNumMinus // '-' read, a digit must follow
	jNumZero  // a leading 0: no more integer digits
	jNumInt
	jNumDot // '.' read, a digit must follow
	jNumFrac
	jNumExp     // 'e' read: sign or digit
	jNumExpSign // sign read: a digit must follow
	jNumExpDigits
)

// maxJSONWhitespace bounds runs of insignificant whitespace.
const maxJSONWhitespace = 16

// Numbers are bounded so that every parser reads them as a finite float64: at most maxIntDigits digits
// before the point and maxExpDigits in the exponent (a syntactically valid 1e999 overflows in Go and JS).
const (
	maxIntDigits = 15
	maxExpDigits = 2
)

// done reports whether a complete object has been read.
func (m jsonMachine) done() bool { return m.state == jAfter && m.stack == "" }

// cost returns the fewest bytes that complete the object from here.
func (m jsonMachine) cost() int {
	n := len(m.stack)
	keyTail := 0
	if m.key {
		keyTail = 2 // ':' and a one-byte value such as 0
	}
	switch m.state {
	case jStart:
		return 2 // {}
	case jValue, jNumMinus, jNumDot, jNumExp, jNumExpSign:
		return n + 1
	case jKey:
		return n + 4 // "":0
	case jColon:
		return n + 2
	case jString:
		return n + int(m.utf8Left) + 1 + keyTail
	case jEscape:
		return n + 2 + keyTail
	case jUnicode:
		return n + int(m.hexLeft) + 1 + keyTail
	case jLiteral:
		return n + len(m.lit)
	}
	return n // jObjectStart, jArrayStart, jAfter and complete numbers
}

// step returns the machine after byte b, or false when b cannot come next.
func (m jsonMachine) step(b byte) (jsonMachine, bool) {
	if isJSONSpace(b) {
		switch m.state {
		case jValue, jObjectStart, jKey, jColon, jArrayStart:
		case jAfter:
			if m.stack == "" {
				return m, false
			}
		case jNumZero, jNumInt, jNumFrac, jNumExpDigits:
			m.state = jAfter
		case jString:
			return m.inString(b)
		default:
			return m, false
		}
		if m.ws >= maxJSONWhitespace {
			return m, false
		}
		m.ws++
		return m, true
	}
	m.ws = 0
	switch m.state {
	case jStart:
		if b != '{' {
			return m, false
		}
		m.stack, m.state = "{", jObjectStart
		return m, true
	case jValue:
		return m.value(b)
	case jObjectStart, jKey:
		if b == '}' && m.state == jObjectStart {
			return m.closeContainer('{')
		}
		if b != '"' {
			return m, false
		}
		m.state, m.key = jString, true
		return m, true
	case jColon:
		if b != ':' {
			return m, false
		}
		m.state = jValue
		return m, true
	case jArrayStart:
		if b == ']' {
			return m.closeContainer('[')
		}
		return m.value(b)
	case jAfter:
		return m.after(b)
	case jNumZero, jNumInt, jNumFrac, jNumExpDigits, jNumMinus, jNumDot, jNumExp, jNumExpSign:
		return m.number(b)
	case jLiteral:
		if b != m.lit[0] {
			return m, false
		}
		if m.lit = m.lit[1:]; m.lit == "" {
			m.state = jAfter
		}
		return m, true
	}
	return m.inString(b)
}

// value starts a value with b.
func (m jsonMachine) value(b byte) (jsonMachine, bool) {
	switch {
	case b == '{':
		m.stack += "{"
		m.state = jObjectStart
	case b == '[':
		m.stack += "["
		m.state = jArrayStart
	case b == '"':
		m.state, m.key = jString, false
	case b == '-':
		m.state = jNumMinus
	case b == '0':
		m.state = jNumZero
	case b >= '1' && b <= '9':
		m.state, m.digits = jNumInt, 1
	case b == 't':
		m.state, m.lit = jLiteral, "rue"
	case b == 'f':
		m.state, m.lit = jLiteral, "alse"
	case b == 'n':
		m.state, m.lit = jLiteral, "ull"
	default:
		return m, false
	}
	return m, true
}

// after handles the byte that follows a complete value.
func (m jsonMachine) after(b byte) (jsonMachine, bool) {
	if m.stack == "" {
		return m, false
	}
	top := m.stack[len(m.stack)-1]
	switch {
	case b == ',' && top == '{':
		m.state = jKey
	case b == ',' && top == '[':
		m.state = jValue
	case b == '}' || b == ']':
		return m.closeContainer(openerOf(b))
	default:
		return m, false
	}
	return m, true
}

func (m jsonMachine) closeContainer(open byte) (jsonMachine, bool) {
	if m.stack == "" || m.stack[len(m.stack)-1] != open {
		return m, false
	}
	m.stack = m.stack[:len(m.stack)-1]
	m.state = jAfter
	return m, true
}

func openerOf(closing byte) byte {
	if closing == '}' {
		return '{'
	}
	return '['
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

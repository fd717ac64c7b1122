package serving

// number continues a number with b; a byte that cannot extend a complete number ends it and is read as
// what follows the value.
func (m jsonMachine) number(b byte) (jsonMachine, bool) {
	next := m.state
	switch m.state {
	case jNumMinus:
		switch {
		case b == '0':
			next = jNumZero
		case isDigit(b):
			next, m.digits = jNumInt, 1
		default:
			return m, false
		}
	case jNumZero, jNumInt:
		switch {
		case isDigit(b) && m.state == jNumInt:
			if m.digits >= maxIntDigits {
				return m, false
			}
			m.digits++
		case b == '.':
			next = jNumDot
		case b == 'e' || b == 'E':
			next = jNumExp
		default:
			m.state = jAfter
			return m.after(b)
		}
	case jNumDot:
		if !isDigit(b) {
			return m, false
		}
		next = jNumFrac
	case jNumFrac:
		switch {
		case isDigit(b):
		case b == 'e' || b == 'E':
			next = jNumExp
		default:
			m.state = jAfter
			return m.after(b)
		}
	case jNumExp:
		switch {
		case b == '+' || b == '-':
			next = jNumExpSign
		case isDigit(b):
			next, m.digits = jNumExpDigits, 1
		default:
			return m, false
		}
	case jNumExpSign:
		if !isDigit(b) {
			return m, false
		}
		next, m.digits = jNumExpDigits, 1
	case jNumExpDigits:
		if !isDigit(b) {
			m.state = jAfter
			return m.after(b)
		}
		if m.digits >= maxExpDigits {
			return m, false
		}
		m.digits++
	}
	m.state = next
	return m, true
}

// inString reads b inside a string, an escape or a \u sequence, checking UTF-8 as it goes.
func (m jsonMachine) inString(b byte) (jsonMachine, bool) {
	switch m.state {
	case jEscape:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			m.state = jString
		case 'u':
			m.state, m.hexLeft = jUnicode, 4
		default:
			return m, false
		}
		return m, true
	case jUnicode:
		if !isDigit(b) && !(b >= 'a' && b <= 'f') && !(b >= 'A' && b <= 'F') {
			return m, false
		}
		if m.hexLeft--; m.hexLeft == 0 {
			m.state = jString
		}
		return m, true
	}
	if m.utf8Left > 0 {
		if b < m.lo || b > m.hi {
			return m, false
		}
		m.utf8Left--
		m.lo, m.hi = 0x80, 0xBF
		return m, true
	}
	switch {
	case b == '"':
		if m.key {
			m.state, m.key = jColon, false
		} else {
			m.state = jAfter
		}
	case b == '\\':
		m.state = jEscape
	case b < 0x20:
		return m, false
	case b < 0x80:
	default:
		return m.utf8Lead(b)
	}
	return m, true
}

// utf8Lead starts a multi-byte sequence, narrowing the range of its second byte where UTF-8 forbids
// overlong forms, surrogates and code points past U+10FFFF.
func (m jsonMachine) utf8Lead(b byte) (jsonMachine, bool) {
	m.lo, m.hi = 0x80, 0xBF
	switch {
	case b >= 0xC2 && b <= 0xDF:
		m.utf8Left = 1
	case b == 0xE0:
		m.utf8Left, m.lo = 2, 0xA0
	case b == 0xED:
		m.utf8Left, m.hi = 2, 0x9F
	case b >= 0xE1 && b <= 0xEF:
		m.utf8Left = 2
	case b == 0xF0:
		m.utf8Left, m.lo = 3, 0x90
	case b == 0xF4:
		m.utf8Left, m.hi = 3, 0x8F
	case b >= 0xF1 && b <= 0xF3:
		m.utf8Left = 3
	default:
		return m, false
	}
	return m, true
}

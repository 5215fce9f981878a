package jsonschema

import (
	"fmt"
	"regexp"
	"strings"
)

// ecmaSpace is ECMA-262's \s (WhiteSpace and LineTerminator), which
// JSON Schema patterns use; RE2's \s is ASCII only.
const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// translatePattern rewrites a JSON Schema pattern (an ECMA-262 regular
// expression, matched anywhere in the string) as an RE2 expression that
// matches the same strings: \s and \S take ECMA-262's white space, and .
// leaves out all of its line terminators (\n, \r, U+2028, U+2029), not \n
// alone. What RE2 cannot express (look-around, back references) or reads
// otherwise (\uXXXX, \cX, \S inside a class) is refused with the reason.
func translatePattern(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			i++
			switch {
			case n == 's' && inClass:
				b.WriteString(ecmaSpace)
			case n == 's':
				b.WriteString("[" + ecmaSpace + "]")
			case n == 'S' && inClass:
				return "", fmt.Errorf(`\S inside a character class has no RE2 equivalent with ECMA-262's white space; write the class out`)
			case n == 'S':
				b.WriteString("[^" + ecmaSpace + "]")
			case n == 'u' || n == 'c':
				return "", fmt.Errorf(`\%c escapes are ECMA-262's and RE2 reads them otherwise; write the character itself or \x{...}`, n)
			case n >= '1' && n <= '9':
				return "", fmt.Errorf("back references (\\%c) cannot be checked by RE2", n)
			case n == 'k':
				return "", fmt.Errorf(`named back references (\k) cannot be checked by RE2`)
			case isAlnum(n) && !strings.ContainsRune("dDwWbBtnvfr0pPx", rune(n)):
				return "", fmt.Errorf("\\%c is not an escape ECMA-262 defines the way RE2 does", n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ] right after [ or [^ is a literal in RE2 but closes an
			// empty class in ECMA-262.
			if strings.HasPrefix(p[i+1:], "]") || strings.HasPrefix(p[i+1:], "^]") {
				return "", fmt.Errorf("an empty class ([] or [^]) reads differently in ECMA-262 and RE2")
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		case c == '(' && strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!") || strings.HasPrefix(p[i:], "(?<=") || strings.HasPrefix(p[i:], "(?<!"):
			return "", fmt.Errorf("look-around cannot be checked by RE2")
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	if _, err := regexp.Compile(out); err != nil {
		return "", fmt.Errorf("not an expression Seam can check: %v", err)
	}
	return out, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

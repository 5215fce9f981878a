package check

import (
	"fmt"
	"strconv"
	"strings"
)

// call is a parsed check rule: name(arg, ..., key: value, ...).
type call struct {
	name    string
	args    []arg          // positional
	named   map[string]arg // key: value
	expr    string         // cel's expression, taken verbatim
	exprCol int
}

// arg is one argument: a field path, a string literal or a number.
type arg struct {
	col    int // 1-based column in the rule
	ident  string
	str    string
	num    float64
	isNum  bool
	isStr  bool
	suffix string // unit after a number ("d" in "7d", "%" in "15%")
}

func (a arg) String() string {
	switch {
	case a.isNum:
		return strconv.FormatFloat(a.num, 'g', -1, 64) + a.suffix
	case a.isStr:
		return strconv.Quote(a.str)
	}
	return a.ident
}

// ruleError is a rule syntax error at a column.
type ruleError struct {
	col int
	msg string
}

func (e *ruleError) Error() string { return fmt.Sprintf("column %d: %s", e.col, e.msg) }

// parseRule parses a check rule. cel(...) keeps its body verbatim so CEL
// syntax (commas, parentheses, strings) needs no escaping.
func parseRule(rule string) (*call, error) {
	p := &ruleParser{src: rule}
	p.space()
	name := p.ident()
	if name == "" {
		return nil, p.fail("expected a rule name such as required, unique or cel, found %s", p.found())
	}
	c := &call{name: name, named: map[string]arg{}}
	p.space()
	if !p.eat('(') {
		return nil, p.fail("expected '(' after %q, found %s", name, p.found())
	}
	if name == "cel" {
		body := strings.TrimRight(rule[p.i:], " \t")
		if !strings.HasSuffix(body, ")") {
			return nil, &ruleError{col: len(rule) + 1, msg: "expected ')' to close cel("}
		}
		c.exprCol = p.i + 1
		c.expr = strings.TrimSpace(body[:len(body)-1])
		if c.expr == "" {
			return nil, p.fail("cel() needs an expression, for example cel(amount < 100000)")
		}
		return c, nil
	}
	p.space()
	if p.eat(')') {
		return c, p.end()
	}
	for {
		p.space()
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		p.space()
		if a.ident != "" && p.eat(':') {
			p.space()
			v, err := p.arg()
			if err != nil {
				return nil, err
			}
			v.col = a.col // point messages at the argument's name
			if _, dup := c.named[a.ident]; dup {
				return nil, &ruleError{col: a.col, msg: fmt.Sprintf("argument %q given twice", a.ident)}
			}
			c.named[a.ident] = v
		} else {
			if len(c.named) > 0 {
				return nil, &ruleError{col: a.col, msg: fmt.Sprintf("positional argument %s after named arguments; put fields first", a)}
			}
			c.args = append(c.args, a)
		}
		p.space()
		if p.eat(')') {
			return c, p.end()
		}
		if !p.eat(',') {
			return nil, p.fail("expected ',' or ')', found %s", p.found())
		}
	}
}

type ruleParser struct {
	src string
	i   int
}

func (p *ruleParser) fail(format string, args ...any) *ruleError {
	return &ruleError{col: p.i + 1, msg: fmt.Sprintf(format, args...)}
}

func (p *ruleParser) found() string {
	if p.i >= len(p.src) {
		return "end of rule"
	}
	return strconv.Quote(p.src[p.i : p.i+1])
}

func (p *ruleParser) space() {
	for p.i < len(p.src) && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
		p.i++
	}
}

func (p *ruleParser) eat(c byte) bool {
	if p.i < len(p.src) && p.src[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *ruleParser) end() error {
	p.space()
	if p.i < len(p.src) {
		return p.fail("unexpected %s after the rule's closing ')'", p.found())
	}
	return nil
}

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

// ident reads a name or dotted field path.
func (p *ruleParser) ident() string {
	start := p.i
	if p.i >= len(p.src) || !isIdentStart(p.src[p.i]) {
		return ""
	}
	for p.i < len(p.src) {
		c := p.src[p.i]
		if !isIdentStart(c) && !(c >= '0' && c <= '9') && c != '.' {
			break
		}
		p.i++
	}
	return p.src[start:p.i]
}

func (p *ruleParser) arg() (arg, error) {
	a := arg{col: p.i + 1}
	if p.i >= len(p.src) {
		return a, p.fail("expected an argument, found end of rule")
	}
	switch c := p.src[p.i]; {
	case isIdentStart(c):
		a.ident = p.ident()
		return a, nil
	case c == '"':
		end := p.i + 1
		for end < len(p.src) && p.src[end] != '"' {
			if p.src[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(p.src) {
			return a, p.fail("unterminated string literal")
		}
		s, err := strconv.Unquote(p.src[p.i : end+1])
		if err != nil {
			return a, p.fail("invalid string literal: %v", err)
		}
		p.i = end + 1
		a.str, a.isStr = s, true
		return a, nil
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.src) && strings.IndexByte("0123456789.eE+-", p.src[p.i]) >= 0 {
			p.i++
		}
		n, err := strconv.ParseFloat(p.src[start:p.i], 64)
		if err != nil {
			p.i = start
			return a, p.fail("invalid number %q", p.src[start:p.i])
		}
		a.num, a.isNum = n, true
		sfx := p.i
		if p.i < len(p.src) && p.src[p.i] == '%' {
			p.i++
		} else {
			for p.i < len(p.src) && isIdentStart(p.src[p.i]) {
				p.i++
			}
		}
		a.suffix = p.src[sfx:p.i]
		return a, nil
	}
	return a, p.fail("expected a field name, string or number, found %s", p.found())
}

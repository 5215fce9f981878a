package infer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Every string, whatever characters it holds, is written as a scalar the
// YAML reader takes back unchanged: a held record's value ends up in an
// enum or an example, and one control character used to make the whole
// proposal unreadable ("control characters are not allowed").
func TestScalarReadsBackUnchanged(t *testing.T) {
	values := []string{
		"", "EUR", "null", "NO", "1.5", "a b", "a: b", "#x", "- x", "'", `"`, `\`, `\x41`,
		"\x7f", "\x00", "\x01", "\t", "\n", "\r", "\r\n", "\u0085", "\u0080", "\u009f",
		"\u00a0", "\u2028", "\u2029", "\ufeff", "\ufffe", "\uffff", "\U0001F600", "é",
		"line\nbreak", "tab\there", strings.Repeat("x", 300),
		"_a", "a-1", "1a", "-a", ".a", "/a", "a.b/c-d_e", "Yes", "OFF", "a~",
	}
	for r := rune(0); r < 0x300; r++ {
		values = append(values, "a"+string(r)+"b")
	}
	for _, v := range values {
		text := "k: " + scalar(v) + "\n"
		var got map[string]string
		if err := yaml.Unmarshal([]byte(text), &got); err != nil {
			t.Errorf("scalar(%q) = %s does not read: %v", v, scalar(v), err)
			continue
		}
		if got["k"] != v {
			t.Errorf("scalar(%q) = %s reads back as %q", v, scalar(v), got["k"])
		}
	}
}

// Invalid UTF-8 is written as U+FFFD rather than as bytes the reader
// refuses.
func TestScalarReplacesInvalidUTF8(t *testing.T) {
	text := "k: " + scalar("a\xffb") + "\n"
	var got map[string]string
	if err := yaml.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("does not read: %v (%s)", err, text)
	}
	if !utf8.ValidString(got["k"]) || got["k"] != "a\ufffdb" {
		t.Fatalf("reads back as %q", got["k"])
	}
}

// Whatever a comment quotes (an error message can carry a byte of a held
// record), the document still reads and the comment ends where it should.
func TestCommentKeepsTheDocumentReadable(t *testing.T) {
	var text strings.Builder
	for r := rune(0); r < 0x300; r++ {
		text.WriteString("a" + string(r) + " ")
	}
	text.WriteString("\u2028 \u2029 \ufffe \uffff \xff end")
	w := &yamlWriter{}
	w.comment("", text.String())
	w.line("k: v")
	var got map[string]string
	if err := yaml.Unmarshal(w.buf.Bytes(), &got); err != nil {
		t.Fatalf("does not read: %v\n%q", err, w.buf.String())
	}
	if len(got) != 1 || got["k"] != "v" {
		t.Fatalf("reads as %v", got)
	}
}

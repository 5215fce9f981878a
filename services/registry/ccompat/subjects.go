package ccompat

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// seamSubject is Seam's subject rule (core/contract): dotted lower-case
// words of letters, digits and _.
var seamSubject = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// ToSeam maps a Confluent subject to a Seam subject. The topic-name
// strategy's suffixes -value and -key become the last word (.value,
// .key); the rest is lower-cased with - written _. So "orders-value" is
// orders.value, "shop.orders-key" shop.orders.key, "Web-Clicks-value"
// web_clicks.value, and a Seam subject such as shop.orders is itself.
// A name that still breaks Seam's rule (a word starting with a digit) is
// refused with 422.
func ToSeam(confluent string) (string, error) {
	base, suffix := confluent, ""
	for _, s := range []string{"-value", "-key"} {
		if strings.HasSuffix(confluent, s) {
			base, suffix = strings.TrimSuffix(confluent, s), "."+s[1:]
			break
		}
	}
	seam := strings.ReplaceAll(strings.ToLower(base), "-", "_") + suffix
	if len(seam) > 128 || !seamSubject.MatchString(seam) {
		return "", &apiError{status: http.StatusUnprocessableEntity, code: codeUnprocessable, msg: fmt.Sprintf(
			"subject %q maps to Seam subject %q, which is not valid: Seam subjects are dotted lower-case words (letters, digits, _) each starting with a letter, at most 128 characters (docs/kafka.md)", confluent, seam)}
	}
	return seam, nil
}

// ToConfluent maps a Seam subject back: a last word value or key becomes
// the -value or -key suffix. Upper case and "-" inside a topic name do not
// come back (Web-Clicks-value lists as web_clicks-value), but both names
// map to the same Seam subject, so either reaches it.
func ToConfluent(seam string) string {
	for _, s := range []string{".value", ".key"} {
		if base, ok := strings.CutSuffix(seam, s); ok && base != "" {
			return base + "-" + s[1:]
		}
	}
	return seam
}

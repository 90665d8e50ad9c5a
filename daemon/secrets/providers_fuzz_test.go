package secrets

import (
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kcd-project/kcd/migrate"
)

// FuzzParseProperties: the file provider reads a properties file as Java's
// Properties.load does, so as migrate's parser (written to the same rules,
// used on Kafka client files) wherever that one accepts the text.
func FuzzParseProperties(f *testing.F) {
	f.Add("db.password=s3cret\n# c\n! c\nkey\\ with\\ blanks : v\\\n   continued\n")
	f.Add("a\\u00e9=\\t\\n\\\\\nb\n:\n=\n\\")
	f.Add("k=v\r\nk2 v2\rk3:v3")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || strings.HasPrefix(text, "\uFEFF") {
			// The provider reads UTF-8, migrate also ISO-8859-1; migrate
			// drops a byte order mark, Java and the provider keep it.
			return
		}
		got := ParseProperties(text)
		want, err := migrate.ParseProperties([]byte(text))
		if err != nil {
			return
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%q: the file provider reads %q, Properties.load %q", text, got, want)
		}
	})
}

package migrate

import (
	"errors"
	"fmt"
	"strings"
)

// jaasEntry is the one login module of a sasl.jaas.config value.
type jaasEntry struct {
	Module  string            // e.g. org.apache.kafka.common.security.plain.PlainLoginModule
	Flag    string            // required, requisite, sufficient or optional
	Options map[string]string // e.g. username, password
}

// parseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does:
//
//	LoginModuleClass controlFlag (key=value)* ;
//
// with values quoted in double or single quotes (backslash escapes as in a
// Java StreamTokenizer: \n \t \r \b \f, octal, any other character stands
// for itself) or unquoted words; // and /* */ comments. Kafka takes exactly
// one login module. Errors name options, never their values.
func parseJAAS(s string) (jaasEntry, error) {
	t := &jaasTokenizer{s: s}
	var e jaasEntry
	tok, err := t.next()
	if err != nil {
		return e, err
	}
	if tok.kind != tokWord {
		return e, errors.New("expected a login module class name")
	}
	e.Module = tok.text
	tok, err = t.next()
	if err != nil {
		return e, err
	}
	if tok.kind != tokWord {
		return e, fmt.Errorf("login module %s: expected a control flag (required, requisite, sufficient or optional)", e.Module)
	}
	switch f := strings.ToLower(tok.text); f {
	case "required", "requisite", "sufficient", "optional":
		e.Flag = f
	default:
		return e, fmt.Errorf("login module %s: invalid control flag (want required, requisite, sufficient or optional)", e.Module)
	}
	e.Options = map[string]string{}
	for {
		tok, err = t.next()
		if err != nil {
			return e, err
		}
		if tok.kind == tokChar && tok.text == ";" {
			break
		}
		if tok.kind == tokEOF {
			return e, fmt.Errorf("login module %s: missing ';' at the end", e.Module)
		}
		if tok.kind != tokWord {
			return e, fmt.Errorf("login module %s: expected an option name or ';'", e.Module)
		}
		key := tok.text
		// A word where an option name belongs may be a piece of a
		// value that a stray quote cut short: only known names are
		// shown.
		name := "option " + key
		if !knownJAASOptions[key] {
			name = fmt.Sprintf("the option at character %d", t.i-len(key)+1)
		}
		tok, err = t.next()
		if err != nil {
			return e, fmt.Errorf("login module %s: %s: %w", e.Module, name, err)
		}
		if tok.kind != tokChar || tok.text != "=" {
			return e, fmt.Errorf("login module %s: %s: expected '=' after the name (is a quote in a value not escaped with a backslash?)", e.Module, name)
		}
		tok, err = t.next()
		if err != nil {
			return e, fmt.Errorf("login module %s: %s: %w", e.Module, name, err)
		}
		if tok.kind != tokWord && tok.kind != tokQuoted {
			return e, fmt.Errorf("login module %s: %s: value missing", e.Module, name)
		}
		e.Options[key] = tok.text
	}
	tok, err = t.next()
	if err != nil {
		return e, err
	}
	if tok.kind != tokEOF {
		return e, errors.New("more than one login module: Kafka takes exactly one in sasl.jaas.config")
	}
	return e, nil
}

// knownJAASOptions are the options of Kafka's PLAIN and SCRAM login modules
// (and a few common others), which errors may name.
var knownJAASOptions = map[string]bool{
	"username": true, "password": true, "tokenauth": true, "serviceName": true,
	"user": true, "debug": true,
}

type jaasTokKind int

const (
	tokEOF jaasTokKind = iota
	tokWord
	tokQuoted
	tokChar
)

type jaasToken struct {
	kind jaasTokKind
	text string
}

type jaasTokenizer struct {
	s string
	i int
}

func isJAASWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '-' || c == '_' || c == '$' || c >= 0x80
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c <= ' ':
			t.i++
		case strings.HasPrefix(t.s[t.i:], "//"):
			nl := strings.IndexAny(t.s[t.i:], "\r\n")
			if nl < 0 {
				t.i = len(t.s)
			} else {
				t.i += nl
			}
		case strings.HasPrefix(t.s[t.i:], "/*"):
			end := strings.Index(t.s[t.i+2:], "*/")
			if end < 0 {
				return jaasToken{}, errors.New("unterminated /* comment")
			}
			t.i += 2 + end + 2
		case c == '"' || c == '\'':
			return t.quoted(c)
		case isJAASWordByte(c):
			start := t.i
			for t.i < len(t.s) && isJAASWordByte(t.s[t.i]) {
				t.i++
			}
			return jaasToken{tokWord, t.s[start:t.i]}, nil
		default:
			t.i++
			return jaasToken{tokChar, string(c)}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

// quoted reads a quoted string; like Java's StreamTokenizer, a line end
// also ends it, which is an error here (an unterminated value).
func (t *jaasTokenizer) quoted(q byte) (jaasToken, error) {
	t.i++
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c == q:
			t.i++
			return jaasToken{tokQuoted, b.String()}, nil
		case c == '\n' || c == '\r':
			return jaasToken{}, errors.New("unterminated quoted value")
		case c == '\\' && t.i+1 < len(t.s):
			t.i++
			e := t.s[t.i]
			switch e {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			default:
				if e >= '0' && e <= '7' {
					// Up to three octal digits, at most \377.
					v := int(e - '0')
					max := 2
					if e > '3' {
						max = 1
					}
					for k := 0; k < max && t.i+1 < len(t.s) && t.s[t.i+1] >= '0' && t.s[t.i+1] <= '7'; k++ {
						t.i++
						v = v*8 + int(t.s[t.i]-'0')
					}
					b.WriteRune(rune(v))
				} else {
					b.WriteByte(e)
				}
			}
			t.i++
		default:
			b.WriteByte(c)
			t.i++
		}
	}
	return jaasToken{}, errors.New("unterminated quoted value")
}

package testreport

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeGoEvent decodes one test2json line. The events are flat objects of
// strings and numbers, so a small scanner handles them without reflection;
// anything else (nested values, odd syntax) goes to encoding/json, which
// stays the judge of what is valid.
func decodeGoEvent(line string) (goEvent, bool) {
	if ev, ok := scanGoEvent(line); ok {
		return ev, true
	}
	var ev goEvent
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		return goEvent{}, false
	}
	return ev, true
}

// scanGoEvent is the fast path; ok is false when it cannot be sure.
func scanGoEvent(s string) (ev goEvent, ok bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return ev, false
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return ev, skipSpace(s, i+1) == len(s)
	}
	for {
		key, next, ok := scanJSONString(s, i)
		if !ok {
			return ev, false
		}
		i = skipSpace(s, next)
		if i >= len(s) || s[i] != ':' {
			return ev, false
		}
		i = skipSpace(s, i+1)
		if i >= len(s) {
			return ev, false
		}
		if s[i] == '"' {
			val, next, ok := scanJSONString(s, i)
			if !ok {
				return ev, false
			}
			if !utf8.ValidString(val) || !knownKey(key) {
				return ev, false // encoding/json repairs bad UTF-8 and matches keys loosely
			}
			switch key {
			case "Action":
				ev.Action = val
			case "Package":
				ev.Package = val
			case "Test":
				ev.Test = val
			case "Output":
				ev.Output = val
			case "ImportPath":
				ev.ImportPath = val
			case "FailedBuild":
				ev.FailedBuild = val
			}
			i = next
		} else {
			// A number, true, false or null: skip to the next delimiter.
			j := i
			for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ' ' {
				c := s[j]
				if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' ||
					c >= 'a' && c <= 'z') {
					return ev, false
				}
				j++
			}
			if j == i || !json.Valid([]byte(s[i:j])) || !knownKey(key) {
				return ev, false
			}
			switch key {
			case "Action", "Package", "Test", "Output", "ImportPath", "FailedBuild":
				return ev, false // a known field that is not a string: let encoding/json decide
			case "Elapsed":
				f, err := strconv.ParseFloat(s[i:j], 64)
				if err != nil {
					return ev, false
				}
				ev.Elapsed = f
			}
			i = j
		}
		i = skipSpace(s, i)
		if i >= len(s) {
			return ev, false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return ev, skipSpace(s, i+1) == len(s)
		default:
			return ev, false
		}
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// scanJSONString reads the string literal at s[i]. Without escapes it
// returns a substring of s; with escapes it lets encoding/json unquote.
func scanJSONString(s string, i int) (val string, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return "", i, false
	}
	escaped := false
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '\\':
			escaped = true
			j++
		case c == '"':
			if !escaped {
				return s[i+1 : j], j + 1, true
			}
			val, ok := unescapeJSON(s[i+1 : j])
			if !ok {
				if err := json.Unmarshal([]byte(s[i:j+1]), &val); err != nil {
					return "", i, false
				}
			}
			return val, j + 1, true
		case c < 0x20:
			return "", i, false
		}
	}
	return "", i, false
}

// hasJSONPrefix reports whether a line may be a JSON object.
func hasJSONPrefix(line string) bool {
	return strings.HasPrefix(strings.TrimLeft(line, " \t"), "{")
}

// unescapeJSON undoes the one-letter escapes; ok is false for \u escapes
// and anything else, which encoding/json then handles.
func unescapeJSON(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i++; i >= len(s) {
			return "", false
		}
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// goEventKeys are the keys test2json writes.
var goEventKeys = []string{"Time", "Action", "Package", "Test", "Output", "Elapsed", "ImportPath", "FailedBuild", "OutputType", "Source"}

// knownKey reports whether key is one the fast path may take at face value:
// written exactly as test2json does, or unlike any field name (encoding/json
// would match "action" to Action).
func knownKey(key string) bool {
	for _, k := range goEventKeys {
		if key == k {
			return true
		}
	}
	for _, k := range []string{"Action", "Package", "Test", "Output", "ImportPath", "FailedBuild"} {
		if strings.EqualFold(key, k) {
			return false
		}
	}
	return utf8.ValidString(key) && !strings.ContainsRune(key, utf8.RuneError)
}

package testreport

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	tapLine        = regexp.MustCompile(`^(\s*)(not ok|ok)\b\s*(\d+)?\s*(?:- )?(.*?)(?:\s+#\s*(SKIP|TODO|skip|todo)\b.*)?$`)
	tapCount       = regexp.MustCompile(`^#\s*(tests|pass|fail|skipped|skip|todo|cancelled)\s+(\d+)\s*$`)
	specCount      = regexp.MustCompile(`^ℹ (tests|pass|fail|skipped|todo|cancelled) (\d+)\s*$`)
	specFail       = regexp.MustCompile(`^(\s*)✖ (.+?)(?: \([\d.]+m?s\))?$`)
	specPass       = regexp.MustCompile(`^\s*[✔✓√] (.+?)(?: \([\d.]+ ?m?s\))?$`)
	plainCountOnly = regexp.MustCompile(`(?i)^\s*\d+ (passed|passing|failed|failing|skipped|pending|errors?|todo)\b(\s*\([^)]*\))?\s*$`)
	plainCount     = regexp.MustCompile(`(?i)(\d+) (passed|passing|failed|failing|skipped|pending|errors?|todo)\b`)
	jsStackFrame   = regexp.MustCompile(`\(?((?:/|\.{1,2}/|[A-Za-z]:\\|file://)[^():\s]+|[\w.-][^():\s]*\.[cm]?[jt]sx?):(\d+)(?::\d+)?\)?$`)
	yamlQuoted     = regexp.MustCompile(`^['"](.*)['"]$`)
)

// ParseGeneric parses output no specific parser claims: TAP (node --test's
// default when not on a terminal: "not ok N - name" with its YAML
// diagnostics and the "# pass N" / "# fail N" totals), node's spec reporter
// ("✖ name" and the "ℹ pass N" totals), and any plain "N passed, M failed"
// line (jest, mocha). Totals printed by the runner win over counting lines.
// Passing tests are named from TAP's "ok N - name" lines (subtests too) and
// the "✔ name" (or ✓) lines of spec reporters.
// A failure's location is the first project frame of its stack, else its
// `location:`.
func ParseGeneric(stdout, stderr string) Report {
	r := Report{Framework: FrameworkGeneric}
	all := lines(joinOutput(stdout, stderr))
	totals := map[string]int{}
	haveTotals := false
	var tapPass, tapFail, tapSkip int
	var names passedNames
	node := false
	for i := 0; i < len(all); i++ {
		l := all[i]
		if strings.HasPrefix(l, "# Subtest:") || strings.HasPrefix(l, "ℹ ") || strings.HasPrefix(l, "▶ ") {
			node = true
		}
		if m := tapCount.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			totals[strings.TrimSuffix(m[1], "ped")] = n
			haveTotals = true
			continue
		}
		if m := specCount.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			totals[strings.TrimSuffix(m[1], "ped")] = n
			haveTotals = true
			node = true
			continue
		}
		if m := tapLine.FindStringSubmatch(l); m != nil {
			yaml, next := tapDiagnostics(all, i+1)
			i = next - 1
			top := m[1] == ""
			switch {
			case m[5] != "":
				if top {
					tapSkip++
				}
			case m[2] == "ok":
				if top {
					tapPass++
				}
				names.add(m[4])
			default:
				if top {
					tapFail++
				}
				if yaml["failureType"] == "subtestsFailed" {
					continue // its failing subtests are reported themselves
				}
				r.Failures = append(r.Failures, tapFailure(m[4], yaml))
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "✖ failing tests:") {
			break // node repeats every failure below this line
		}
		if m := specPass.FindStringSubmatch(l); m != nil {
			names.add(m[1])
			continue
		}
		if m := specFail.FindStringSubmatch(l); m != nil {
			body, next := indentedBlock(all, i+1, len(m[1]))
			i = next - 1
			if len(body) == 0 {
				continue // a suite whose failing tests were listed already
			}
			r.Failures = append(r.Failures, jsFailure(m[2], body, ""))
		}
	}
	r.recognized = haveTotals || tapPass+tapFail+tapSkip > 0
	switch {
	case haveTotals:
		r.Passed = totals["pass"]
		r.Failed = totals["fail"] + totals["cancelled"]
		r.Skipped = totals["skip"] + totals["todo"]
	case tapPass+tapFail+tapSkip > 0:
		r.Passed, r.Failed, r.Skipped = tapPass, tapFail, tapSkip
	default:
		r.Passed, r.Failed, r.Skipped, r.Errors, r.recognized = plainCounts(all)
	}
	if node {
		r.Framework = FrameworkNode
	}
	r.PassedTests = names.list
	r.Failures = capFailures(r.Failures)
	r.Output = tail(joinOutput(stdout, stderr), tailLines, tailBytes)
	return r
}

// plainCounts reads the last line that has "N passed"-style counts, with
// the neighbouring lines that hold one count each (mocha's "3 passing",
// "1 failing" on lines of their own).
func plainCounts(all []string) (passed, failed, skipped, errors int, found bool) {
	for i := len(all) - 1; i >= 0; i-- {
		ms := plainCount.FindAllStringSubmatch(all[i], -1)
		if ms == nil {
			continue
		}
		lo, hi := i, i
		for lo > 0 && plainCountOnly.MatchString(all[lo-1]) && plainCountOnly.MatchString(all[i]) {
			lo--
		}
		for hi+1 < len(all) && plainCountOnly.MatchString(all[hi+1]) && plainCountOnly.MatchString(all[i]) {
			hi++
		}
		ms = nil
		for j := lo; j <= hi; j++ {
			ms = append(ms, plainCount.FindAllStringSubmatch(all[j], -1)...)
		}
		for _, m := range ms {
			n, _ := strconv.Atoi(m[1])
			switch strings.ToLower(m[2]) {
			case "passed", "passing":
				passed += n
			case "failed", "failing":
				failed += n
			case "skipped", "pending", "todo":
				skipped += n
			case "error", "errors":
				errors += n
			}
		}
		return passed, failed, skipped, errors, true
	}
	return
}

// tapDiagnostics reads the YAML block ("---" … "...") after a TAP test line,
// returning its top-level keys (block scalars joined) and the index after it.
func tapDiagnostics(all []string, i int) (map[string]string, int) {
	if i >= len(all) || strings.TrimSpace(all[i]) != "---" {
		return nil, i
	}
	kv := map[string]string{}
	raw := map[string][]string{}
	key := ""
	keyIndent := -1
	done := func() map[string]string {
		for k, ls := range raw {
			kv[k] = strings.Join(dedent(trimBlank(ls)), "\n")
		}
		return kv
	}
	i++
	for ; i < len(all); i++ {
		l := all[i]
		t := strings.TrimSpace(l)
		if t == "..." {
			return done(), i + 1
		}
		ind := len(l) - len(strings.TrimLeft(l, " "))
		if keyIndent < 0 && t != "" {
			keyIndent = ind
		}
		if ind == keyIndent && t != "" {
			k, v, ok := strings.Cut(t, ":")
			if ok && !strings.Contains(k, " ") {
				key = k
				v = strings.TrimSpace(v)
				if v == "|-" || v == "|" || v == ">-" || v == ">" {
					v = ""
				}
				if m := yamlQuoted.FindStringSubmatch(v); m != nil {
					v = m[1]
				}
				kv[key] = v
				continue
			}
		}
		if key != "" && (ind > keyIndent || t == "") {
			if kv[key] != "" {
				raw[key] = append(raw[key], kv[key])
				kv[key] = ""
			}
			raw[key] = append(raw[key], l)
		}
	}
	return done(), i
}

// indentedBlock returns the lines after i indented deeper than indent.
func indentedBlock(all []string, i, indent int) ([]string, int) {
	var body []string
	for ; i < len(all); i++ {
		l := all[i]
		if strings.TrimSpace(l) == "" {
			body = append(body, "")
			continue
		}
		if len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break
		}
		body = append(body, l)
	}
	return dedent(trimBlank(body)), i
}

// tapFailure builds a Failure from a TAP test line and its diagnostics.
func tapFailure(name string, yaml map[string]string) Failure {
	f := Failure{Name: strings.TrimSpace(name)}
	msg := strings.TrimSpace(yaml["error"])
	if msg == "" {
		msg = strings.TrimSpace(yaml["message"])
	}
	f.Message = head(msg, messageLines, messageBytes)
	f.File, f.Line = jsLocation(lines(yaml["stack"]))
	if f.File == "" {
		if m := jsStackFrame.FindStringSubmatch(yaml["location"]); m != nil {
			f.File = m[1]
			f.Line, _ = strconv.Atoi(m[2])
		}
	}
	typ := yaml["name"]
	switch {
	case yaml["failureType"] == "testTimeoutFailure" || strings.Contains(msg, "timed out"):
		f.Kind = KindTimeout
	case typ != "":
		f.Kind = kindOfException(typ)
	case yaml["code"] == "ERR_ASSERTION":
		f.Kind = KindAssertion
	default:
		f.Kind = kindOfText(msg)
	}
	return f
}

// jsFailure builds a Failure from a spec reporter's error text.
func jsFailure(name string, body []string, typ string) Failure {
	f := Failure{Name: strings.TrimSpace(name)}
	var msg []string
	for _, l := range body {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "at ") {
			break
		}
		msg = append(msg, l)
	}
	f.Message = message(trimBlank(msg))
	f.File, f.Line = jsLocation(body)
	if typ == "" && len(msg) > 0 {
		typ, _, _ = strings.Cut(strings.TrimSpace(msg[0]), " ")
		typ = strings.TrimSuffix(typ, ":")
	}
	f.Kind = kindOfException(typ)
	if !strings.HasSuffix(typ, "Error") {
		f.Kind = kindOfText(f.Message)
	}
	if strings.Contains(f.Message, "ERR_ASSERTION") || strings.HasPrefix(typ, "AssertionError") {
		f.Kind = KindAssertion
	}
	return f
}

// jsLocation is the first stack frame outside node's internals and
// node_modules.
func jsLocation(stack []string) (string, int) {
	for _, l := range stack {
		t := strings.TrimSpace(l)
		if strings.Contains(t, "node:") || strings.Contains(t, "node_modules") {
			continue
		}
		if m := jsStackFrame.FindStringSubmatch(t); m != nil {
			line, _ := strconv.Atoi(m[2])
			return strings.TrimPrefix(m[1], "file://"), line
		}
	}
	return "", 0
}

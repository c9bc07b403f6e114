package critic

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// userGreetTest is a person's acceptance test of greetProject.
const userGreetTest = `package acceptance

import (
	"testing"

	"example.com/greet"
)

func TestUserGreeting(t *testing.T) {
	if got := greet.Greet("Ada"); got != "Hello, Ada!" {
		t.Errorf("Greet(Ada) = %q", got)
	}
}
`

func greetWithoutTests() map[string]string {
	files := greetProject("Hello, Ada!")
	delete(files, "acceptance/greet_test.go")
	return files
}

func TestUserTestsAlone(t *testing.T) {
	t.Parallel()
	// The test designer has no reply: asking it fails the test.
	m := &fakeModel{replies: map[string][]string{AgentCritic: {`{"verdict": "fail", "failures": [{"test_id": "tampering:acceptance/user_test.go", "location": "", "expected": "unchanged", "actual": "rewritten", "kind": "tampering"}], "suspect_tests": [], "summary": "the tests were changed"}`}}}
	c, ws := newCritic(t, greetWithoutTests(), m, WithUserTests(false, SuiteFile{Path: "user_test.go", Content: userGreetTest}))
	s, err := c.DesignTests(t.Context(), "greet", greetPlan())
	if err != nil {
		t.Fatal(err)
	}
	if m.calls(AgentTestDesigner) != 0 {
		t.Errorf("the test designer was asked %d times; supplied tests alone need none", m.calls(AgentTestDesigner))
	}
	if !slices.Equal(s.Files, []string{"acceptance/user_test.go"}) || !slices.Equal(s.User, s.Files) || !slices.Equal(s.Tests, []string{"acceptance/user_test.go::TestUserGreeting"}) {
		t.Fatalf("suite %+v", s)
	}
	if got := readWS(t, ws, "acceptance/user_test.go"); got != userGreetTest {
		t.Errorf("workspace copy %q", got)
	}
	// The project's code rewrites the supplied test: restored, reported.
	os.WriteFile(filepath.Join(ws, "acceptance/user_test.go"), []byte("package acceptance\n"), 0o644)
	f, err := c.Check(t.Context(), greetPlan())
	if err != nil {
		t.Fatal(err)
	}
	if f.Passed() || !slices.ContainsFunc(f.Failures, func(x Failure) bool {
		return x.Kind == KindTampering && x.TestID == "tampering:acceptance/user_test.go"
	}) {
		t.Errorf("findings %+v: want a tampering failure for the supplied test", f)
	}
	if got := readWS(t, ws, "acceptance/user_test.go"); got != userGreetTest {
		t.Errorf("the supplied test was not restored: %q", got)
	}
	// A suspect supplied test is never repaired: the person is told.
	_, err = c.RepairTests(t.Context(), "greet", greetPlan(), Findings{Verdict: VerdictSuspectTest,
		SuspectTests: []SuspectTest{{TestID: "TestUserGreeting", Reason: "expects a comma the goal does not ask for"}}})
	if !errors.Is(err, ErrSuspectUserTest) || m.calls(AgentTestDesigner) != 0 {
		t.Errorf("RepairTests: %v after %d designer calls, want ErrSuspectUserTest and none", err, m.calls(AgentTestDesigner))
	}
	if got := readWS(t, ws, "acceptance/user_test.go"); got != userGreetTest {
		t.Errorf("the supplied test changed: %q", got)
	}
}

func TestUserTestsWithDesigned(t *testing.T) {
	t.Parallel()
	reply := func(files ...SuiteFile) string {
		b, _ := json.Marshal(suiteReply{Files: files, Notes: "n"})
		return string(b)
	}
	designed := SuiteFile{Path: "acceptance/designed_test.go", Content: "package acceptance\n\nimport \"testing\"\n\nfunc TestDesigned(t *testing.T) {}\n"}
	// The designer also writes a file with the supplied test's path: the
	// supplied one wins.
	clash := SuiteFile{Path: "acceptance/user_test.go", Content: "package acceptance\n\nimport \"testing\"\n\nfunc TestClash(t *testing.T) {}\n"}
	designed2 := SuiteFile{Path: "acceptance/designed_test.go", Content: "package acceptance\n\nimport \"testing\"\n\nfunc TestDesigned2(t *testing.T) {}\n"}
	m := &fakeModel{replies: map[string][]string{AgentTestDesigner: {reply(designed, clash), reply(designed2, clash)}}}
	c, ws := newCritic(t, greetWithoutTests(), m, WithUserTests(true, SuiteFile{Path: "user_test.go", Content: userGreetTest}))
	s, err := c.DesignTests(t.Context(), "greet", greetPlan())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Files, []string{"acceptance/designed_test.go", "acceptance/user_test.go"}) || !slices.Equal(s.User, []string{"acceptance/user_test.go"}) {
		t.Fatalf("suite %+v", s)
	}
	if !slices.Equal(s.Tests, []string{"acceptance/designed_test.go::TestDesigned", "acceptance/user_test.go::TestUserGreeting"}) {
		t.Errorf("tests %v", s.Tests)
	}
	if got := readWS(t, ws, "acceptance/user_test.go"); got != userGreetTest {
		t.Errorf("the supplied test was replaced: %q", got)
	}
	if !s.IsUserTest("TestUserGreeting") || !s.IsUserTest("example.com/greet/acceptance.TestUserGreeting") || s.IsUserTest("TestDesigned") {
		t.Error("IsUserTest tells supplied tests from designed ones wrongly")
	}
	// A suspect designed test is repaired; the supplied one stays.
	s2, err := c.RepairTests(t.Context(), "greet", greetPlan(), Findings{Verdict: VerdictSuspectTest,
		SuspectTests: []SuspectTest{{TestID: "TestDesigned", Reason: "wrong"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Version != s.Version+1 || !slices.Equal(s2.User, s.User) || readWS(t, ws, "acceptance/user_test.go") != userGreetTest {
		t.Errorf("repaired suite %+v", s2)
	}
	// A suspect supplied test stops the repair.
	if _, err := c.RepairTests(t.Context(), "greet", greetPlan(), Findings{Verdict: VerdictSuspectTest,
		SuspectTests: []SuspectTest{{TestID: "acceptance/user_test.go::TestUserGreeting", Reason: "wrong"}}}); !errors.Is(err, ErrSuspectUserTest) {
		t.Errorf("RepairTests of a supplied test: %v, want ErrSuspectUserTest", err)
	}
	// After a resume the suite (from the checkpoint) still knows which
	// files are the person's.
	c2, _ := newCritic(t, greetWithoutTests(), m, WithSuite(c.Suite()), WithSuiteFiles(c.SuiteFiles()...))
	if _, err := c2.RepairTests(t.Context(), "greet", greetPlan(), Findings{Verdict: VerdictSuspectTest,
		SuspectTests: []SuspectTest{{TestID: "TestUserGreeting", Reason: "wrong"}}}); !errors.Is(err, ErrSuspectUserTest) {
		t.Errorf("RepairTests after resume: %v, want ErrSuspectUserTest", err)
	}
}

package hiddentest

import (
	"reflect"
	"testing"

	"wordfreq"
)

func TestHiddenTies(t *testing.T) {
	got := wordfreq.Top("B a; c! A b", 10)
	want := []wordfreq.Count{{"a", 2}, {"b", 2}, {"c", 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Top = %v, want %v", got, want)
	}
}

func TestHiddenNone(t *testing.T) {
	if got := wordfreq.Top("a b", 0); len(got) != 0 {
		t.Errorf("Top(n=0) = %v", got)
	}
	if got := wordfreq.Top("", 3); len(got) != 0 {
		t.Errorf("Top(empty) = %v", got)
	}
}

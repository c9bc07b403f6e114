package slow

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestForever(t *testing.T) {
	time.Sleep(time.Minute)
}

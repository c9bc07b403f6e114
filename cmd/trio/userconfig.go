package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/trioagent/trio/cmd/trio/config"
)

// The user-level configuration: $XDG_CONFIG_HOME/trio/trio.yaml, else
// ~/.config/trio/trio.yaml. It sits under the project's trio.yaml:
//
//   - a setting the project's file gives wins; one it leaves out (or gives
//     its zero value: "", 0, false, an empty list) is the user file's;
//   - blocks (endpoint, models, budgets, sandbox, telemetry...) merge key by
//     key by the same rule; maps (endpoints, mcp servers, token_parameter)
//     merge by name, the project's entry winning whole;
//   - policy, runs_dir and env_file relative to the user file's folder.
//
// An error in it names the file and line and stops before the run (exit
// 3), as one in the project's does. TRIO_USER_CONFIG=off ignores it.
const envUserConfig = "TRIO_USER_CONFIG"

// userConfigPath is the user-level trio.yaml's path ("" when neither
// XDG_CONFIG_HOME nor HOME is set).
func userConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) { // the XDG spec ignores a relative one
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "trio", "trio.yaml")
}

// withUserConfig merges the user-level file, when there is one, under
// project.
func withUserConfig(project *config.File) (*config.File, error) {
	if strings.EqualFold(os.Getenv(envUserConfig), "off") {
		return project, nil
	}
	path := userConfigPath()
	if path == "" {
		return project, nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return project, nil
	}
	user, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("user configuration: %w", err)
	}
	dir := filepath.Dir(path)
	for _, p := range []*string{&user.Policy, &user.RunsDir, &user.EnvFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	merged := *project
	mergeUnder(reflect.ValueOf(&merged).Elem(), reflect.ValueOf(user).Elem())
	merged.Path = project.Path
	merged.UserPath = path
	return &merged, nil
}

// mergeUnder fills dst's zero fields from src, recursively into structs,
// and adds src's map entries dst lacks.
func mergeUnder(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Struct:
		for i := range dst.NumField() {
			if dst.Type().Field(i).IsExported() {
				mergeUnder(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Map:
		if src.Len() == 0 {
			return
		}
		out := reflect.MakeMapWithSize(dst.Type(), dst.Len()+src.Len())
		for _, k := range src.MapKeys() {
			out.SetMapIndex(k, src.MapIndex(k))
		}
		for _, k := range dst.MapKeys() {
			out.SetMapIndex(k, dst.MapIndex(k))
		}
		dst.Set(out)
	default:
		if dst.IsZero() {
			dst.Set(src)
		}
	}
}

// applyModels applies --model values to cfg: NAME is every role's model
// (the roles' own in trio.yaml are dropped), ROLE=NAME one role's, later
// values winning.
func applyModels(cfg *config.File, values []string) error {
	for _, v := range values {
		role, name, perRole := strings.Cut(v, "=")
		if !perRole {
			name = role
		}
		if strings.TrimSpace(name) == "" {
			return configError(fmt.Errorf("--model %q: want NAME or ROLE=NAME", v))
		}
		if !perRole {
			cfg.Models = config.Models{Default: name}
			continue
		}
		if !cfg.Models.Set(role, name) {
			return configError(fmt.Errorf("--model %s: want NAME or ROLE=NAME, a role of %s", v, strings.Join(config.Roles, ", ")))
		}
	}
	return nil
}

// readGoalFile is --goal-file's content: the file, or standard input for
// "-"; more than limit bytes is an error.
func readGoalFile(path string, limit int) ([]byte, error) {
	if path != "-" {
		return readLimited(path, limit)
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	return b, nil // readGoal refuses one over the limit by its length
}

// loadEnvFile sets the variables of a .env file in Trio's own process,
// for what Trio itself reads (endpoint keys and base URLs, OTEL_*): a
// variable already set wins, as with every .env loader. It never reaches
// a sandbox, whose commands get a fixed environment (sandbox.BaseEnv),
// nor an MCP server except through a ${VAR} its configuration names.
// Lines are KEY=VALUE, optionally after "export", the value optionally in
// single quotes (taken as is) or double quotes (\n, \" and \\ escapes);
// blank lines and lines starting with # are skipped. A bad line is an
// error naming the file and line.
func loadEnvFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'$") {
			return fmt.Errorf("%s:%d: want KEY=VALUE", path, n)
		}
		v, err := envValue(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s:%d: %s: %v", path, n, k, err)
		}
		if _, set := os.LookupEnv(k); !set {
			os.Setenv(k, v)
		}
	}
	return sc.Err()
}

func envValue(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, "'"):
		end := strings.Index(v[1:], "'")
		if end < 0 {
			return "", errors.New("unterminated single quote")
		}
		return v[1 : end+1], nil
	case strings.HasPrefix(v, `"`):
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			switch c := v[i]; {
			case c == '"':
				return b.String(), nil
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(v[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", errors.New("unterminated double quote")
	}
	if i := strings.Index(v, " #"); i >= 0 { // a comment after the value
		v = strings.TrimSpace(v[:i])
	}
	return v, nil
}

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/policy"
)

// applyPrices reads --price values: MODEL=IN,OUT sets the model's entry of
// the price table (over trio.yaml's), IN,OUT alone is the price of every
// role (the flat form, returned).
func applyPrices(cfg *config.File, values []string) (*eval.Price, error) {
	var flat *eval.Price
	for _, v := range values {
		model, pair, named := strings.Cut(v, "=")
		if !named {
			pair = v
		}
		a, b, ok := strings.Cut(pair, ",")
		in, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
		out, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
		bad := !ok || err1 != nil || err2 != nil || math.IsNaN(in) || math.IsNaN(out) || in < 0 || out < 0 ||
			in > config.MaxPrice || out > config.MaxPrice || (named && strings.TrimSpace(model) == "")
		if bad {
			return nil, configError(fmt.Errorf("--price %q: want MODEL=IN,OUT (a model's US dollars per million prompt and completion tokens, e.g. gpt-4.1-mini=0.4,1.6) or IN,OUT for every role, each from 0 to %d", v, config.MaxPrice))
		}
		if !named {
			flat = &eval.Price{Prompt: in, Completion: out}
			continue
		}
		if cfg.Prices == nil {
			cfg.Prices = map[string]config.Price{}
		}
		cfg.Prices[strings.TrimSpace(model)] = config.Price{Input: &in, Output: &out}
	}
	return flat, nil
}

// roleModel is the model name a role asks its endpoint for.
func roleModel(cfg *config.File, role string) string {
	if m := cfg.Models.PerRole()[role]; m != "" {
		return m
	}
	if cfg.Models.Default != "" {
		return cfg.Models.Default
	}
	return os.Getenv(envModel)
}

// evalRolePrices prices each role by its configured model (an endpoint
// eval: a replay's roles are priced by the model their replies name,
// modelPrices), and every role by the flat --price.
func evalRolePrices(source string, cfg *config.File, flat *eval.Price) map[string]eval.Price {
	out := map[string]eval.Price{}
	if flat != nil {
		out["*"] = *flat
	}
	if source != evalEndpoint {
		return out
	}
	for _, role := range config.Roles {
		if p, ok := cfg.Price(roleModel(cfg, role)); ok {
			out[role] = eval.Price{Prompt: p.Input, Completion: p.Output}
		}
	}
	return out
}

// modelPrices is the price table by model name.
func modelPrices(cfg *config.File) map[string]eval.Price {
	out := map[string]eval.Price{}
	for model := range cfg.Prices {
		if p, ok := cfg.Price(model); ok {
			out[model] = eval.Price{Prompt: p.Input, Completion: p.Output}
		}
	}
	return out
}

// evalProvenance is what trio eval knows of the eval's origin: the
// models and endpoints per role, the effective configuration and policy.
// No key is read into it: an endpoint is its provider and host.
func evalProvenance(source string, cfg *config.File, pol *policy.Policy, polPath string) (eval.Provenance, error) {
	p := eval.Provenance{ModelSource: source, Roles: map[string]eval.RoleProvenance{}, Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens}
	efforts := cfg.Reasoning.PerRole()
	for _, role := range config.Roles {
		if source != evalEndpoint {
			// demo.ServeScript names each role's model after the role.
			p.Roles[role] = eval.RoleProvenance{Model: role, Provider: "replay", Host: "loopback"}
			continue
		}
		e, ok := cfg.Endpoints[role]
		if !ok {
			e = cfg.Endpoint
		}
		rp := eval.RoleProvenance{Model: roleModel(cfg, role), Provider: config.KindOpenAI, Reasoning: cfg.Reasoning.Default}
		if r, ok := efforts[role]; ok {
			rp.Reasoning = r
		}
		base, env, def := e.BaseURL, "OPENAI_BASE_URL", "https://api.openai.com/v1"
		if e.Kind == config.KindAnthropic {
			rp.Provider, rp.Reasoning, env, def = config.KindAnthropic, "", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"
		}
		if base == "" {
			base = os.Getenv(env)
		}
		if base == "" {
			base = def
		}
		rp.Host = hostOf(base)
		p.Roles[role] = rp
	}
	text, err := effectiveConfig(cfg)
	if err != nil {
		return p, err
	}
	p.Config = eval.NewDocument(cfg.Path, text)
	if polPath != "" {
		b, err := os.ReadFile(polPath)
		if err != nil {
			return p, configError(err)
		}
		p.Policy = eval.NewDocument(polPath, string(b))
	} else {
		p.Policy = eval.NewDocument("", "built-in strict policy "+pol.Name()+" (policy/default.yaml of this trio)")
	}
	p.Trio = eval.BuildInfo()
	if version != "" {
		p.Trio.Version = version
	}
	return p, nil
}

// hostOf is a URL's host (with its port), never its user, path or query.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsed)"
	}
	return u.Host
}

// effectiveConfig is the configuration as the eval uses it (after flags),
// as indented JSON with keys as trio.yaml names them. Values that could
// hold a secret are left out: the values of env and headers maps (their
// names stay) and the user, path and query of every URL.
func effectiveConfig(cfg *config.File) (string, error) {
	v := plain(reflect.ValueOf(*cfg), "")
	if v == nil {
		v = map[string]any{} // nothing set: every default
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode the configuration: %w", err)
	}
	return string(b), nil
}

var durationType = reflect.TypeFor[config.Duration]()

// plain turns a configuration value into maps, slices and scalars, zero
// values left out, secrets redacted (key is the value's key).
func plain(v reflect.Value, key string) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return plain(v.Elem(), key)
	case reflect.Struct:
		if v.Type() == durationType {
			if d := v.Interface().(config.Duration); d.Duration != 0 {
				return d.Duration.String()
			}
			return nil
		}
		out := map[string]any{}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			x := plain(v.Field(i), name)
			if m, ok := x.(map[string]any); ok && (f.Anonymous || strings.Contains(opts, "inline")) {
				for k, y := range m {
					out[k] = y
				}
				continue
			}
			if x != nil {
				out[name] = x
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			if key == "env" || key == "headers" {
				out[fmt.Sprint(k.Interface())] = "(redacted)"
				continue
			}
			if x := plain(v.MapIndex(k), fmt.Sprint(k.Interface())); x != nil {
				out[fmt.Sprint(k.Interface())] = x
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return nil
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = plain(v.Index(i), key)
		}
		return out
	case reflect.String:
		s := v.String()
		if s == "" {
			return nil
		}
		if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
		return s
	default:
		if v.IsZero() || !v.CanInterface() {
			return nil
		}
		return v.Interface()
	}
}

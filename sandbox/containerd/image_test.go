package containerd

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// tinyImage writes an OCI image layout tarball holding sh, sleep and a few
// coreutils copied from the host with their shared libraries.
func tinyImage(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the tiny image is built for amd64")
	}
	files := map[string]string{} // path in image -> host path
	for _, bin := range []string{"dash", "sleep", "true", "id", "cat", "echo", "ls"} {
		host, err := exec.LookPath(bin)
		if err != nil {
			t.Skipf("%s not on the host: %v", bin, err)
		}
		name := bin
		if bin == "dash" {
			name = "sh"
		}
		files["bin/"+name] = host
		out, err := exec.Command("ldd", host).Output()
		if err != nil {
			t.Skipf("ldd %s: %v", host, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "/") {
					files[strings.TrimPrefix(f, "/")] = f
				}
			}
		}
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	dirs := map[string]bool{}
	for name, host := range files {
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		_ = host
	}
	for d := range dirs {
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	for name, host := range files {
		b, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))})
		tw.Write(b)
	}
	tw.Close()

	blobs := map[string][]byte{}
	add := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return d, len(b)
	}
	layerDigest, layerSize := add(layer.Bytes())
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		"config": map[string]any{},
	})
	cfgDigest, cfgSize := add(cfg)
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfgDigest, "size": cfgSize},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layerDigest, "size": layerSize}},
	})
	mDigest, mSize := add(manifest)
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []any{map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mDigest, "size": mSize,
			"platform":    map[string]string{"architecture": "amd64", "os": "linux"},
			"annotations": map[string]string{"io.containerd.image.name": "docker.io/trio/tiny:test", "org.opencontainers.image.ref.name": "test"},
		}},
	})
	path := filepath.Join(t.TempDir(), "tiny.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tar.NewWriter(f)
	put := func(name string, b []byte) {
		out.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		out.Write(b)
	}
	put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	put("index.json", index)
	for d, b := range blobs {
		put("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImageMode(t *testing.T) {
	t.Parallel()
	requireContainerd(t)
	s := newSandbox(t, sandbox.RunSpec{Settings: Config{RootFS: RootFSImage, Image: tinyImage(t)}})
	res := run(t, s, "sh", "-c", "id -u; echo hi > /workspace/f; ls /; echo x > /bin/x")
	if !strings.HasPrefix(res.Stdout, "65534\n") || res.ExitCode == 0 {
		t.Errorf("%+v", res)
	}
	if strings.Contains(res.Stdout, "usr") {
		t.Errorf("the host's /usr is in the image's root:\n%s", res.Stdout)
	}
	if b, err := os.ReadFile(filepath.Join(s.cfg.Workspace, "f")); string(b) != "hi\n" {
		t.Errorf("workspace write: %q %v", b, err)
	}
}

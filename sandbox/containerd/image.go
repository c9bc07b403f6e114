package containerd

import (
	"context"
	"fmt"
	"os"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// image returns the configured image, importing an OCI tarball or pulling a
// reference that containerd does not have yet, and unpacks it.
func (s *Sandbox) image(ctx context.Context) (client.Image, error) {
	ref := s.cfg.Image
	var img client.Image
	if st, err := os.Stat(ref); err == nil && !st.IsDir() {
		f, err := os.Open(ref)
		if err != nil {
			return nil, fmt.Errorf("image tarball %s: %w", ref, err)
		}
		defer f.Close()
		imgs, err := s.client.Import(ctx, f, client.WithAllPlatforms(false))
		if err != nil {
			return nil, fmt.Errorf("import image tarball %s: %w", ref, err)
		}
		if len(imgs) == 0 {
			return nil, fmt.Errorf("image tarball %s holds no image", ref)
		}
		img = client.NewImage(s.client, imgs[0])
	} else {
		img, err = s.client.GetImage(ctx, ref)
		if errdefs.IsNotFound(err) {
			img, err = s.client.Pull(ctx, ref, client.WithPullUnpack)
			if err != nil {
				return nil, fmt.Errorf("image %s is not in containerd and pulling it failed (no registry reachable? import an OCI tarball instead): %w", ref, err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", ref, err)
		}
	}
	if ok, err := img.IsUnpacked(ctx, ""); err != nil || !ok {
		if err := img.Unpack(ctx, ""); err != nil {
			return nil, fmt.Errorf("unpack image %s: %w", img.Name(), err)
		}
	}
	return img, nil
}

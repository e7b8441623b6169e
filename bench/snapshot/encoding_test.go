//go:build bench

package snapshot

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
)

// encodingFormats are the formats of the encoding rows, plain (the baseline) first.
var encodingFormats = []codec.Format{{}, {Compressed: true}, {Encrypted: true}, {Compressed: true, Encrypted: true}}

// boundSlackMiB is how much more peak RSS the largest encoding size may take than the smallest
// before the memory counts as growing with the size.
const boundSlackMiB = 16

// encodingRow is one size's figures per format (encodingFormats' order). Every slice holds one
// value per run, and run i of each format was measured in the same round, on the same etcd and
// MinIO, so ratios are taken run by run.
type encodingRow struct {
	Size        string          `json:"size"`
	Data        string          `json:"data"`
	SnapshotMiB float64         `json:"snapshotMiB"`
	Formats     []formatFigures `json:"formats"`
}

// formatFigures are one format's figures in an encodingRow.
type formatFigures struct {
	Format        string    `json:"format"`
	Backup        []float64 `json:"backupSeconds"`
	BackupRSSMiB  []float64 `json:"backupPeakRSSMiB"`
	StoredMiB     []float64 `json:"storedMiB"`
	Restore       []float64 `json:"restoreReadSeconds"`
	RestoreRSSMiB []float64 `json:"restoreReadPeakRSSMiB"`
}

// encodingSizes are the sizes of the encoding rows: BENCH_ENCODING_SIZES, 256MiB,1GiB when it
// is unset, none when it is set empty.
func encodingSizes(t *testing.T) []int64 {
	if v, ok := os.LookupEnv("BENCH_ENCODING_SIZES"); ok && strings.TrimSpace(v) == "" {
		return nil
	}
	return benchutil.Sizes(t, "BENCH_ENCODING_SIZES", "256MiB,1GiB")
}

// ageIdentity is a fresh X25519 identity for the run's encrypted formats.
func ageIdentity(t *testing.T) string {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// benchEncoding fills a fresh one-member etcd with size bytes of data and, runs times, backs it
// up in each format and reads each backup back as a restore would, every one in a child process.
func benchEncoding(t *testing.T, store s3.Config, identity string, size int64, data string, runs int) encodingRow {
	e, _ := filledEtcd(t, size, data)
	// Stat and Delete of what the children stored (so MinIO holds one object at a time).
	b, err := s3.New(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := encodingRow{Size: benchutil.SizeName(size), Data: data}
	for _, f := range encodingFormats {
		r.Formats = append(r.Formats, formatFigures{Format: f.String()})
	}
	for i := range runs {
		// Each run starts at another format, so that none always runs first (or after the same one).
		for j := range encodingFormats {
			k := (i + j) % len(encodingFormats)
			f, ff := encodingFormats[k], &r.Formats[k]
			key := fmt.Sprintf("encoding/%d-%s-%d", size, strings.ReplaceAll(f.String(), "+", "-"), i)
			job := childJob{Op: opBackup, Format: f, Endpoint: e.Endpoint, Key: key, Identity: identity}
			backup := child(t, job)
			info, err := b.Stat(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			job.Op, job.Endpoint = opRestore, ""
			read := child(t, job)
			if read.Size != backup.Size {
				t.Fatalf("%s: the restore read %d bytes, the backup stored a snapshot of %d", key, read.Size, backup.Size)
			}
			if err := b.Delete(t.Context(), key); err != nil {
				t.Fatal(err)
			}
			r.SnapshotMiB = float64(backup.Size) / mib
			ff.Backup, ff.BackupRSSMiB = append(ff.Backup, backup.Seconds), append(ff.BackupRSSMiB, float64(backup.PeakRSS)/mib)
			ff.StoredMiB = append(ff.StoredMiB, float64(info.Size)/mib)
			ff.Restore, ff.RestoreRSSMiB = append(ff.Restore, read.Seconds), append(ff.RestoreRSSMiB, float64(read.PeakRSS)/mib)
			t.Logf("%s %s run %d: backup %.1f s (peak RSS %.0f MiB), stored %.0f of %.0f MiB, restore read %.1f s (peak RSS %.0f MiB)",
				r.Size, f, i, backup.Seconds, ff.BackupRSSMiB[i], ff.StoredMiB[i], r.SnapshotMiB, read.Seconds, ff.RestoreRSSMiB[i])
		}
	}
	return r
}

// ratio is the median over runs of xs[i] / base[i].
func ratio(xs, base []float64) float64 {
	rs := make([]float64, len(xs))
	for i := range xs {
		rs[i] = xs[i] / base[i]
	}
	return benchutil.Median(rs)
}

// spread is the slowest of xs over the fastest.
func spread(xs []float64) float64 { return slices.Max(xs) / slices.Min(xs) }

// stored is a format's stored bytes over the snapshot's (median over runs).
func (r encodingRow) stored(ff formatFigures) float64 {
	return benchutil.Median(ff.StoredMiB) / r.SnapshotMiB
}

// writeEncoding appends the encoding rows' section to the results.
func writeEncoding(b *strings.Builder, enc []encodingRow) {
	fmt.Fprintf(b, "\n## What compression (zstd) and encryption (age) cost a backup and a restore read\n\n")
	var data []string
	for _, r := range enc {
		if !slices.Contains(data, r.Data) {
			data = append(data, r.Data)
			fmt.Fprintf(b, "- Data `%s` (BENCH_ENCODING_DATA): %s.\n", r.Data, dataDescriptions[r.Data])
		}
	}
	fmt.Fprintf(b, "- Each size is a fresh etcd of its own, filled with the data of its row. Every run backs it up once in each format, "+
		"`snapshot.Take` into the same MinIO through `backend.WithEncoding` (plaintext -> zstd at its default level -> age to one X25519 recipient), "+
		"and then reads that object back as a restore's fetch does: Get through the decoding backend, read to the end through `snapshot.NewVerifyingReader`. "+
		"Both run in a child process as ours above (GOMEMLIMIT=%s; peak RSS is its VmHWM). The formats take turns running first in a run.\n", goMemLimit)
	fmt.Fprintf(b, "- x plain: the format's time over the plain backup's (or plain read's) of the same run, median over runs. "+
		"stored: the object's bytes over the snapshot's. Times are min / median.\n")
	fmt.Fprintf(b, "- Targets: peak RSS <= %d MiB in every format, backup and restore read; bounded: a format's peak RSS at the largest size "+
		"at most %d MiB above the smallest size's. No time target: the cost is stated below the table.\n\n", targetRSSMiB, boundSlackMiB)
	fmt.Fprintf(b, "| size | data | snapshot | format | backup s | backup x plain | backup peak RSS | stored | restore read s | read x plain | read peak RSS | targets met |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range enc {
		plain := r.Formats[0]
		for _, ff := range r.Formats {
			brss, rrss := slices.Max(ff.BackupRSSMiB), slices.Max(ff.RestoreRSSMiB)
			met := "RSS"
			if brss > targetRSSMiB || rrss > targetRSSMiB {
				met = "**not RSS**"
			}
			fmt.Fprintf(b, "| %s | %s | %.0f MiB | %s | %.2f / %.2f | %.2fx | %.0f MiB | %.2fx | %.2f / %.2f | %.2fx | %.0f MiB | %s |\n",
				r.Size, r.Data, r.SnapshotMiB, ff.Format, slices.Min(ff.Backup), benchutil.Median(ff.Backup), ratio(ff.Backup, plain.Backup), brss,
				r.stored(ff), slices.Min(ff.Restore), benchutil.Median(ff.Restore), ratio(ff.Restore, plain.Restore), rrss, met)
		}
	}
	fmt.Fprintf(b, "\n%s\n", boundedLine(enc))
	fmt.Fprintf(b, "\nCost, per size, against the plain backup and read of the same runs:\n\n")
	for _, r := range enc {
		var costs []string
		for _, ff := range r.Formats[1:] {
			costs = append(costs, fmt.Sprintf("%s backup %.2fx plain, stored %.2fx, restore read %.2fx",
				ff.Format, ratio(ff.Backup, r.Formats[0].Backup), r.stored(ff), ratio(ff.Restore, r.Formats[0].Restore)))
		}
		plain := r.Formats[0]
		fmt.Fprintf(b, "- %s (%s data): %s. (The plain backup's own runs spread %.2fx, its reads %.2fx, max over min: closer to 1x than that is noise.)\n",
			r.Size, r.Data, strings.Join(costs, "; "), spread(plain.Backup), spread(plain.Restore))
	}
}

// boundedLine says whether each format's peak RSS stayed flat from the smallest encoding size
// to the largest of the same data.
func boundedLine(enc []encodingRow) string {
	var grew []string
	compared := false
	for _, data := range []string{jsonData, randomData} {
		var rows []encodingRow
		for _, r := range enc {
			if r.Data == data {
				rows = append(rows, r)
			}
		}
		if len(rows) < 2 {
			continue
		}
		small := slices.MinFunc(rows, func(a, b encodingRow) int { return int(a.SnapshotMiB - b.SnapshotMiB) })
		large := slices.MaxFunc(rows, func(a, b encodingRow) int { return int(a.SnapshotMiB - b.SnapshotMiB) })
		compared = true
		for k, ff := range large.Formats {
			for _, op := range []struct {
				name         string
				small, large []float64
			}{{"backup", small.Formats[k].BackupRSSMiB, ff.BackupRSSMiB}, {"restore read", small.Formats[k].RestoreRSSMiB, ff.RestoreRSSMiB}} {
				if s, l := slices.Max(op.small), slices.Max(op.large); l > s+boundSlackMiB {
					grew = append(grew, fmt.Sprintf("%s %s %.0f MiB at %s, %.0f MiB at %s", ff.Format, op.name, s, small.Size, l, large.Size))
				}
			}
		}
	}
	switch {
	case !compared:
		return "Bounded: not checked (one encoding size per data set)."
	case len(grew) == 0:
		return fmt.Sprintf("Bounded: met (no format's peak RSS at the largest size more than %d MiB above the smallest's).", boundSlackMiB)
	default:
		return "Bounded: **not met, the peak RSS grows with the size (a bug)**: " + strings.Join(grew, "; ") + "."
	}
}

// Package pngtext reads and writes a PNG's tEXt chunks (keyword, text),
// the PNG's own place for what a picture is of: the screenshots say there
// which run they show and when they were made, which git, keeping no
// mtimes, cannot.
//
// Read takes bytes from a stranger: it reads chunk headers one at a time,
// skips every other chunk without holding it, and refuses a tEXt chunk over
// MaxText bytes, more than MaxChunks of them, a bad CRC, or a keyword the
// PNG specification does not allow. Standard library only.
package pngtext

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// signature opens every PNG.
var signature = []byte("\x89PNG\r\n\x1a\n")

const (
	// MaxText is the largest tEXt chunk Read holds (keyword, separator and
	// text).
	MaxText = 64 << 10
	// MaxChunks is how many tEXt chunks Read takes: with MaxText, at most
	// 4 MiB held.
	MaxChunks = 64
	// maxLen is the largest chunk length the PNG specification allows.
	maxLen = 1<<31 - 1
)

// Text is one tEXt chunk.
type Text struct {
	Key, Value string
}

// Read gives r's tEXt chunks by keyword, reading up to IEND. It refuses
// what is not a PNG, a keyword said twice, and the chunks the package doc
// says it refuses.
func Read(r io.Reader) (map[string]string, error) {
	head := make([]byte, len(signature))
	if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head, signature) {
		return nil, errors.New("pngtext: not a PNG (no PNG signature)")
	}
	out := map[string]string{}
	for i := 0; ; i++ {
		var h [8]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil, fmt.Errorf("pngtext: a chunk's header: %w (a truncated PNG?)", unexpected(err))
		}
		n, typ := binary.BigEndian.Uint32(h[:4]), string(h[4:])
		switch {
		case n > maxLen:
			return nil, fmt.Errorf("pngtext: chunk %q says %d bytes, over the PNG's 2^31-1", typ, n)
		case i == 0 && typ != "IHDR":
			return nil, fmt.Errorf("pngtext: the first chunk is %q, not IHDR", typ)
		case typ == "IEND" && n != 0:
			return nil, fmt.Errorf("pngtext: an IEND of %d bytes: want 0", n)
		case typ == "IEND":
			return out, nil
		case typ != "tEXt":
			if _, err := io.CopyN(io.Discard, r, int64(n)+4); err != nil {
				return nil, fmt.Errorf("pngtext: chunk %q: %w (a truncated PNG?)", typ, unexpected(err))
			}
			continue
		case n > MaxText:
			return nil, fmt.Errorf("pngtext: a tEXt chunk of %d bytes, over the %d this reader holds", n, MaxText)
		case len(out) >= MaxChunks:
			return nil, fmt.Errorf("pngtext: more than %d tEXt chunks", MaxChunks)
		}
		body := make([]byte, n+4)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("pngtext: a tEXt chunk: %w (a truncated PNG?)", unexpected(err))
		}
		data, sum := body[:n], binary.BigEndian.Uint32(body[n:])
		if crc32.Update(crc32.ChecksumIEEE(h[4:]), crc32.IEEETable, data) != sum {
			return nil, errors.New("pngtext: a tEXt chunk's CRC does not match its bytes")
		}
		key, value, ok := bytes.Cut(data, []byte{0})
		if !ok {
			return nil, errors.New("pngtext: a tEXt chunk without the NUL after its keyword")
		}
		if err := checkKey(string(key)); err != nil {
			return nil, err
		}
		if _, dup := out[string(key)]; dup {
			return nil, fmt.Errorf("pngtext: two tEXt chunks say %q", key)
		}
		out[string(key)] = latin1(value)
	}
}

// unexpected says an EOF inside a PNG as what it is.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// latin1 is b, Latin-1 as tEXt is, in UTF-8.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// checkKey refuses a keyword the PNG specification does not allow: 1 to 79
// printable Latin-1 characters, no leading, trailing or double space.
func checkKey(k string) error {
	if len(k) < 1 || len(k) > 79 {
		return fmt.Errorf("pngtext: a keyword of %d bytes: want 1 to 79", len(k))
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 32 || c > 126 && c < 161 {
			return fmt.Errorf("pngtext: keyword %q: byte %#x is not printable Latin-1", k, c)
		}
	}
	if k[0] == ' ' || k[len(k)-1] == ' ' || bytes.Contains([]byte(k), []byte("  ")) {
		return fmt.Errorf("pngtext: keyword %q: a leading, trailing or double space", k)
	}
	return nil
}

// Set gives png with texts as its tEXt chunks, right after IHDR, in the
// order given; a tEXt chunk png had with one of their keywords is dropped,
// every other chunk kept as it was. Keywords are ASCII as checkKey allows,
// values ASCII without NUL (what the kit writes; Latin-1 beyond is refused
// rather than guessed at).
func Set(png []byte, texts ...Text) ([]byte, error) {
	if !bytes.HasPrefix(png, signature) {
		return nil, errors.New("pngtext: not a PNG (no PNG signature)")
	}
	keys := map[string]bool{}
	var add []byte
	for _, t := range texts {
		if err := checkKey(t.Key); err != nil {
			return nil, err
		}
		if keys[t.Key] {
			return nil, fmt.Errorf("pngtext: %q given twice", t.Key)
		}
		keys[t.Key] = true
		if !ascii(t.Key) || !ascii(t.Value) || bytes.IndexByte([]byte(t.Value), 0) >= 0 {
			return nil, fmt.Errorf("pngtext: %q: write ASCII without NUL", t.Key)
		}
		add = appendChunk(add, "tEXt", slices.Concat([]byte(t.Key), []byte{0}, []byte(t.Value)))
	}
	out := slices.Clone(signature)
	rest := png[len(signature):]
	for i := 0; ; i++ {
		if len(rest) < 12 {
			return nil, errors.New("pngtext: a truncated PNG (no IEND)")
		}
		n := binary.BigEndian.Uint32(rest[:4])
		typ := string(rest[4:8])
		if uint64(n)+12 > uint64(len(rest)) {
			return nil, fmt.Errorf("pngtext: chunk %q runs past the end", typ)
		}
		chunk := rest[:12+n]
		rest = rest[12+n:]
		if i == 0 && typ != "IHDR" {
			return nil, fmt.Errorf("pngtext: the first chunk is %q, not IHDR", typ)
		}
		if typ == "tEXt" {
			if k, _, ok := bytes.Cut(chunk[8:8+n], []byte{0}); ok && keys[string(k)] {
				continue
			}
		}
		out = append(out, chunk...)
		if i == 0 {
			out = append(out, add...)
		}
		if typ == "IEND" {
			return out, nil
		}
	}
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// appendChunk appends a chunk of typ holding data to b.
func appendChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

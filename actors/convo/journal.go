package convo

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/troupe-ai/troupe/llm"
)

// JournalFile is the name of an agent's journal in its directory.
const JournalFile = "journal.log"

// The journal is a sequence of records, each an 8-byte header (the
// payload's length and its CRC-32C, little-endian uint32s) and the
// payload: one kind byte and a JSON document. It is only ever appended
// to, by one writer, so a record that is incomplete or fails its checksum
// can only be the last one, cut off by a kill or a power loss (a torn
// tail): the reader drops it and says so.
const (
	recordHeader = 8
	// maxRecord bounds a record's declared length, so a corrupt header
	// cannot ask for a huge buffer.
	maxRecord = 1 << 30
)

// Record kinds.
const (
	// kindOpen opens a journal: journalOpen, naming the snapshot
	// (checkpoint.json) the journal continues.
	kindOpen byte = 'O'
	// kindStep: a tool step begins (stepRecord): the checkpoint's fields
	// as they are now and what changed in the conversation.
	kindStep byte = 'S'
	// kindCalls: call records of the step in progress (callsRecord).
	kindCalls byte = 'C'
)

// journalVersion is the version of the journal's records.
const journalVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type journalOpen struct {
	V  int    `json:"v"`
	ID string `json:"id"`
}

type stepRecord struct {
	Round   int             `json:"round"`
	Phase   string          `json:"phase,omitempty"`
	Usage   llm.Usage       `json:"usage"`
	Cost    float64         `json:"cost"`
	Model   string          `json:"model"`
	SavedAt time.Time       `json:"saved_at"`
	State   json.RawMessage `json:"state,omitempty"`
	Conv    convDelta       `json:"conv"`
}

type callsRecord struct {
	Round int            `json:"round"`
	Calls []JournalEntry `json:"calls"`
}

// appendRecord frames a record of kind with its JSON payload onto dst.
func appendRecord(dst []byte, kind byte, payload []byte) []byte {
	crc := crc32.Update(crc32.Update(0, castagnoli, []byte{kind}), castagnoli, payload)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(1+len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	dst = append(dst, kind)
	return append(dst, payload...)
}

// record is one decoded record: its kind and JSON payload (a slice of the
// journal's bytes).
type record struct {
	kind    byte
	payload []byte
}

// decodeRecords splits a journal into its records. valid is the length
// of the prefix they span. A record that is incomplete or fails its
// checksum ends the journal: when nothing readable follows it, it is a
// torn tail of torn bytes (everything from valid on), which a process cut
// off mid-write leaves and which is dropped; when a whole, valid record
// follows it, the journal is corrupt (an error wrapping
// ErrCorruptCheckpoint), since dropping the records after it could run a
// call twice.
func decodeRecords(data []byte) (recs []record, valid, torn int, err error) {
	off := 0
	for off < len(data) {
		r, n := readRecord(data[off:])
		if n == 0 {
			if next := off + declaredEnd(data[off:]); next > off && next < len(data) {
				if _, m := readRecord(data[next:]); m > 0 {
					return recs, off, len(data) - off, fmt.Errorf("%w: journal record at byte %d is damaged and records follow it", ErrCorruptCheckpoint, off)
				}
			}
			return recs, off, len(data) - off, nil
		}
		recs = append(recs, r)
		off += n
	}
	return recs, off, 0, nil
}

// readRecord decodes the record at the start of data and returns it with
// its length, or n == 0 when it is incomplete or damaged.
func readRecord(data []byte) (r record, n int) {
	if len(data) < recordHeader {
		return record{}, 0
	}
	size := binary.LittleEndian.Uint32(data)
	if size == 0 || size > maxRecord || uint64(len(data)-recordHeader) < uint64(size) {
		return record{}, 0
	}
	body := data[recordHeader : recordHeader+int(size)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[4:]) {
		return record{}, 0
	}
	return record{kind: body[0], payload: body[1:]}, recordHeader + int(size)
}

// declaredEnd is where the record at the start of data says it ends (0
// when its header is incomplete or its length impossible).
func declaredEnd(data []byte) int {
	if len(data) < recordHeader {
		return 0
	}
	size := binary.LittleEndian.Uint32(data)
	if size == 0 || size > maxRecord || uint64(len(data)-recordHeader) < uint64(size) {
		return 0
	}
	return recordHeader + int(size)
}

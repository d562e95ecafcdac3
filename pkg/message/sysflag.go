package message

// Message sysFlag bits (docs/protocol.md §5.7).
const (
	FlagCompressed  int32 = 0x1
	FlagMultiTags   int32 = 0x2
	FlagBornHostV6  int32 = 0x10
	FlagStoreHostV6 int32 = 0x20
	FlagNeedUnwrap  int32 = 0x40
	FlagInnerBatch  int32 = 0x80

	// Transaction type, bits 2–3.
	TransactionNotType      int32 = 0x0
	TransactionPreparedType int32 = 0x4
	TransactionCommitType   int32 = 0x8
	TransactionRollbackType int32 = 0xC
	transactionMask         int32 = 0xC

	// Compression type, bits 8–10. 0 means ZLIB for old senders.
	CompressionZLIBDefault int32 = 0x0
	CompressionLZ4         int32 = 0x100
	CompressionZSTD        int32 = 0x200
	CompressionZLIB        int32 = 0x300
	compressionMask        int32 = 0x700
)

// TransactionType returns the transaction bits of sysFlag (one of the
// Transaction*Type values).
func TransactionType(sysFlag int32) int32 { return sysFlag & transactionMask }

// SetTransactionType replaces the transaction bits of sysFlag.
func SetTransactionType(sysFlag, typ int32) int32 {
	return sysFlag&^transactionMask | typ&transactionMask
}

// CompressionType returns the compression type bits (Compression* values);
// meaningful only when FlagCompressed is set.
func CompressionType(sysFlag int32) int32 { return sysFlag & compressionMask }

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer target: the frame header decoder. A header that decodes must
 * re-encode to exactly the bytes it came from.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfs_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_header h;
	__u8 out[PFS_HEADER_SIZE];
	__u32 len = size > 0xffffffffu ? 0xffffffffu : (__u32)size;
	int rc;

	memset(&h, 0, sizeof(h));
	rc = pfs_header_decode(&h, data, len);
	if (rc) {
		if (rc != -EBADMSG && rc != -EPROTONOSUPPORT && rc != -EMSGSIZE)
			abort();
		if (size >= PFS_HEADER_SIZE && rc == -EBADMSG &&
		    h.magic == PFS_PROTO_MAGIC &&
		    h.version == PFS_PROTO_VERSION &&
		    !(h.flags & ~PFS_FLAGS_KNOWN))
			abort();	/* rejected a valid header */
		return 0;
	}
	if (size < PFS_HEADER_SIZE || h.magic != PFS_PROTO_MAGIC ||
	    h.version != PFS_PROTO_VERSION || h.payload_len > PFS_MAX_PAYLOAD ||
	    (h.flags & ~PFS_FLAGS_KNOWN))
		abort();	/* accepted an invalid header */
	pfs_header_encode(&h, out);
	if (memcmp(out, data, PFS_HEADER_SIZE))
		abort();
	return 0;
}

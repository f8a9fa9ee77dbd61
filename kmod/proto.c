// SPDX-License-Identifier: GPL-2.0
/*
 * The PFS wire protocol, compiled unchanged from the shared C sources
 * (common/proto/, or the copy in proto/ of a DKMS package: Kbuild puts the
 * one that exists on the include path). kbuild cannot easily build objects
 * outside M=, so the sources are included here.
 */
#include "pfs_xdr.c"
#include "pfs_msg.c"

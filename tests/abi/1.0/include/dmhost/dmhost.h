/* dmhost SDK: everything a unit author needs. See unit.h first. */
#ifndef DMHOST_DMHOST_H
#define DMHOST_DMHOST_H

#include "error.h"
#include "fs.h"
#include "host.h"
#include "position.h"
#include "sdk.h"
#include "unit.h"

#endif /* DMHOST_DMHOST_H */

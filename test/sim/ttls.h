/* ttls.h -- the lock TTLs (ms) the scenarios draw from (scenario.c),
 * which the differential test's expiry check covers (dtexpiry.c). */
#ifndef SIM_TTLS_H
#define SIM_TTLS_H

#define SIM_TTL_SAFE_MIN 150 /* safe */
#define SIM_TTL_SAFE_MAX 500
#define SIM_TTL_BREAK_MIN 200 /* the breaking scenarios and pause-with-fencing */
#define SIM_TTL_BREAK_MAX 500
#define SIM_TTL_WAN 1000 /* wan */

#endif

/* calib.h: TLSMETER_CALIBRATE=1: measure once what record decryption costs on this CPU
 * on the hardware path and on the table (software) path, as references for the verdicts
 * ("hardware AES here does X ns/B: expected gain Nx"). */
#ifndef TLSM_CALIB_H
#define TLSM_CALIB_H

/* Run once per process (first tracked context); writes calib events. */
void tlsm_calib_once(const char *app_crypto);

#endif

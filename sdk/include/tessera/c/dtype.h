/*===- tessera/c/dtype.h - The DLPack type codes Tessera adds --------*- C -*-===
 *
 * Tensors cross every Tessera boundary as DLPack tensors. DLPack 0.6
 * (Debian 12's) has no type code for bool; DLPack 0.8 added kDLBool = 6.
 * Tessera writes bool as that code, 8 bits, 1 lane, whichever DLPack header
 * is installed: test `dtype.code == TESSERA_DL_BOOL`, never a bare 6.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSERA_C_DTYPE_H
#define TESSERA_C_DTYPE_H

#define TESSERA_DL_BOOL 6

#endif /* TESSERA_C_DTYPE_H */

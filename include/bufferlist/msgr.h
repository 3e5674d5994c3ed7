/* SPDX-License-Identifier: MIT */
#ifndef BUFFERLIST_MSGR_H
#define BUFFERLIST_MSGR_H
#endif

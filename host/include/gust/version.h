#ifndef GUST_VERSION_H
#define GUST_VERSION_H

#define GUST_VERSION "0.1.0"

#endif

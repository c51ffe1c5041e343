/* Helpers for the template headers (one body, included once per type). */
#ifndef MLI_PRV_TEMPLATE_H
#define MLI_PRV_TEMPLATE_H
#define MLI_CAT_(a, b) a##b
#define MLI_CAT(a, b) MLI_CAT_(a, b)
#define MLI_STR_(a) #a
#define MLI_STR(a) MLI_STR_(a)
#endif

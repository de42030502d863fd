/* bson_out--1.1.0--1.2.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION bson_out UPDATE TO '1.2.0'" to load this file. \quit

//! An image someone showed the bot, made fit for a model: checked, decoded
//! within limits, scaled down, and encoded again.
//!
//! - The format is read from the bytes, never from the name or the type the
//!   uploader claimed; only PNG, JPEG, WebP and GIF (its first frame) pass.
//! - The header's width × height is checked against
//!   `discord.attachments.maxImagePixels` before any pixel is decoded, and the
//!   decoder itself is limited to that size and to what such an image needs
//!   in memory, so a small file that claims to be huge costs nothing.
//! - An image whose longer side passes `maxImageSide` is scaled down
//!   (keeping its shape), because a provider would do so anyway and charges
//!   by the pixel (see `executive::vision`).
//! - It is always encoded again, as JPEG (quality 85) or, when it really
//!   uses transparency, PNG: what leaves the bot is a plain picture, with no
//!   metadata (a photo's EXIF location stays behind), in a format every
//!   provider takes.
//!
//! CPU-bound: callers run it on a blocking thread.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// JPEG quality of the copy sent: small, and text in screenshots stays legible.
const JPEG_QUALITY: u8 = 85;

/// A transparent image whose PNG is larger than this is flattened onto
/// white and sent as JPEG: Anthropic refuses images over 5 MB (in base64,
/// 4/3 of this).
const MAX_PNG_BYTES: usize = 3_500_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ImageError {
    #[error("not a PNG, JPEG, WebP or GIF image")]
    NotAnImage,
    #[error(
        "{width}×{height} pixels, more than the {max} allowed (discord.attachments.maxImagePixels)"
    )]
    TooManyPixels { width: u32, height: u32, max: u64 },
    #[error("it could not be decoded ({0})")]
    Decode(String),
    #[error("it could not be encoded again ({0})")]
    Encode(String),
}

/// An image ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// `image/jpeg` or `image/png`.
    pub media_type: &'static str,
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// The size it arrived in.
    pub original: (u32, u32),
}

/// Checks, decodes, scales down and encodes `bytes` again.
pub(crate) fn prepare(
    bytes: &[u8],
    max_pixels: u64,
    max_side: u32,
) -> Result<Prepared, ImageError> {
    let format = match image::guess_format(bytes) {
        Ok(f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP | ImageFormat::Gif)) => f,
        _ => return Err(ImageError::NotAnImage),
    };
    let reader = || {
        let mut r = ImageReader::with_format(Cursor::new(bytes), format);
        let mut limits = Limits::default();
        // Each side alone may not pass the pixel limit; the product is checked below.
        let side = u32::try_from(max_pixels).unwrap_or(u32::MAX);
        limits.max_image_width = Some(side);
        limits.max_image_height = Some(side);
        // The decoded pixels (at most 8 bytes each, 16-bit RGBA) and some working room.
        limits.max_alloc = Some(max_pixels.saturating_mul(8).saturating_add(16 << 20));
        r.limits(limits);
        r
    };
    let (width, height) = reader().into_dimensions().map_err(decode_error)?;
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(ImageError::TooManyPixels {
            width,
            height,
            max: max_pixels,
        });
    }
    let mut img = reader().decode().map_err(decode_error)?;
    if width.max(height) > max_side {
        img = img.resize(max_side, max_side, FilterType::Triangle);
    }
    let (w, h) = (img.width(), img.height());
    let bytes = encode(&img)?;
    Ok(Prepared {
        media_type: bytes.0,
        bytes: bytes.1,
        width: w,
        height: h,
        original: (width, height),
    })
}

fn decode_error(e: image::ImageError) -> ImageError {
    match e {
        image::ImageError::Limits(_) => {
            ImageError::Decode("it needs more memory than allowed".into())
        }
        other => ImageError::Decode(other.to_string()),
    }
}

/// PNG when the image really is transparent somewhere (and not too large), else JPEG.
fn encode(img: &DynamicImage) -> Result<(&'static str, Vec<u8>), ImageError> {
    if img.color().has_alpha() {
        let rgba = img.to_rgba8();
        if rgba.pixels().any(|p| p.0[3] < u8::MAX) {
            let mut png = Vec::new();
            DynamicImage::ImageRgba8(rgba.clone())
                .write_with_encoder(PngEncoder::new(&mut png))
                .map_err(|e| ImageError::Encode(e.to_string()))?;
            if png.len() <= MAX_PNG_BYTES {
                return Ok(("image/png", png));
            }
            return jpeg(&on_white(&rgba));
        }
    }
    jpeg(&DynamicImage::ImageRgb8(img.to_rgb8()))
}

fn jpeg(img: &DynamicImage) -> Result<(&'static str, Vec<u8>), ImageError> {
    let mut out = Vec::new();
    img.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
        .map_err(|e| ImageError::Encode(e.to_string()))?;
    Ok(("image/jpeg", out))
}

/// A transparent image flattened onto white (JPEG has no transparency).
fn on_white(rgba: &image::RgbaImage) -> DynamicImage {
    let rgb = image::RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let mix = |c: u8| ((u16::from(c) * u16::from(a) + 255 * (255 - u16::from(a))) / 255) as u8;
        image::Rgb([mix(r), mix(g), mix(b)])
    });
    DynamicImage::ImageRgb8(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32, alpha: u8) -> Vec<u8> {
        let img = image::RgbaImage::from_fn(width, height, |x, y| {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 90, alpha])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgba8(img)
            .write_with_encoder(PngEncoder::new(&mut out))
            .unwrap();
        out
    }

    #[test]
    fn a_large_image_is_scaled_down_keeping_its_shape_and_sent_as_jpeg() {
        let p = prepare(&png(2000, 1000, 255), 25_000_000, 1568).unwrap();
        assert_eq!((p.width, p.height), (1568, 784));
        assert_eq!(p.original, (2000, 1000));
        assert_eq!(p.media_type, "image/jpeg");
        assert_eq!(image::guess_format(&p.bytes).unwrap(), ImageFormat::Jpeg);
        let small = prepare(&png(300, 200, 255), 25_000_000, 1568).unwrap();
        assert_eq!(
            (small.width, small.height),
            (300, 200),
            "small ones keep their size"
        );
    }

    #[test]
    fn real_transparency_stays_png() {
        let p = prepare(&png(64, 64, 128), 25_000_000, 1568).unwrap();
        assert_eq!(p.media_type, "image/png");
        assert_eq!(image::guess_format(&p.bytes).unwrap(), ImageFormat::Png);
    }

    #[test]
    fn too_many_pixels_are_refused_from_the_header_alone() {
        // 3000×3000 = 9 MP against a 4 MP limit.
        let err = prepare(&png(3000, 3000, 255), 4_000_000, 1568).unwrap_err();
        assert_eq!(
            err,
            ImageError::TooManyPixels {
                width: 3000,
                height: 3000,
                max: 4_000_000
            }
        );
        // A PNG header claiming 100,000 × 100,000 with no pixel data behind it.
        let mut lying = png(1, 1, 255);
        lying[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        lying[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        assert!(matches!(
            prepare(&lying, 25_000_000, 1568),
            Err(ImageError::TooManyPixels { .. } | ImageError::Decode(_))
        ));
    }

    #[test]
    fn what_is_not_a_supported_image_is_refused_whatever_its_name() {
        let broken = prepare(b"GIF89a\x10\x00\x10\x00\x00", 25_000_000, 1568);
        assert!(matches!(broken, Err(ImageError::Decode(_))), "{broken:?}");
        assert_eq!(
            prepare(b"hello, I am text", 25_000_000, 1568).unwrap_err(),
            ImageError::NotAnImage
        );
        assert_eq!(
            prepare(b"BM\x00\x00 a bitmap", 25_000_000, 1568).unwrap_err(),
            ImageError::NotAnImage
        );
    }

    #[test]
    fn a_gif_gives_its_first_frame() {
        use image::codecs::gif::GifEncoder;
        let mut out = Vec::new();
        {
            let mut enc = GifEncoder::new(&mut out);
            for shade in [10u8, 250] {
                let frame = image::Frame::new(image::RgbaImage::from_pixel(
                    8,
                    8,
                    image::Rgba([shade, shade, shade, 255]),
                ));
                enc.encode_frame(frame).unwrap();
            }
        }
        let p = prepare(&out, 25_000_000, 1568).unwrap();
        let back = image::load_from_memory(&p.bytes).unwrap().to_rgb8();
        assert!(back.get_pixel(4, 4).0[0] < 40, "the first (dark) frame");
    }
}
